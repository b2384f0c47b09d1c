//! What a module declares at module scope, read once for every crate: its variables with their
//! byte sizes ([`module_variables`], [`symbols`]), its `.version`/`.target` header
//! ([`header`]), the base names of Itanium-mangled names ([`demangled_base`]), their full names
//! and parameter types ([`demangle::demangle`]), and which entry a kernel name a user wrote
//! means ([`resolve_kernel_name`], shared by `run` and `inspect`).
//!
//! These used to be computed in the GPU runtime and in the harness separately, and the two
//! disagreed: the harness did not multiply by a `.v2`/`.v4` vector width and listed `.extern`
//! variables (whose storage is another module's) as writable symbols.

use crate::model::{Item, Module, VarDecl};
use crate::op::{Space, ValueType};
use std::collections::BTreeMap;

pub mod demangle;

/// A module-scope variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleVar {
    /// Its name (mangled for C++ variables outside `extern "C"`).
    pub name: String,
    /// Its state space (`global`, `const`, `shared`, ...).
    pub space: Space,
    /// The element type (`.f64`), when the declaration names one this crate knows.
    pub element: Option<ValueType>,
    /// `.v2`/`.v4`/`.v8`: elements per vector; 1 otherwise.
    pub vector: u32,
    /// Element × vector width × every dimension; `None` when a dimension is open (`[]`) or the
    /// element type is unknown.
    pub bytes: Option<u64>,
    /// `.extern`: declared here, stored in another module.
    pub external: bool,
}

impl ModuleVar {
    /// Reads one declaration.
    pub fn of(v: &VarDecl) -> Option<ModuleVar> {
        let mut space = None;
        let mut element = None;
        let mut vector = 1u32;
        let mut external = false;
        for a in &v.attrs {
            let w = a.trim_start_matches('.');
            if a == ".extern" {
                external = true;
            } else if let Some(t) = ValueType::parse(w) {
                element = Some(t);
            } else if let Some(s) = Space::parse(w).filter(|_| a.starts_with('.')) {
                space.get_or_insert(s);
            } else if let Some(n) = w.strip_prefix('v').and_then(|n| n.parse().ok()) {
                vector = n;
            }
        }
        let bytes = element.and_then(|t| {
            v.dims
                .iter()
                .try_fold(u64::from(t.bytes()) * u64::from(vector), |acc, d| {
                    d.and_then(|n| acc.checked_mul(n))
                })
        });
        Some(ModuleVar {
            name: v.name.clone(),
            space: space?,
            element,
            vector,
            bytes,
            external,
        })
    }
}

/// Every module-scope variable, in text order.
pub fn module_variables(m: &Module) -> Vec<ModuleVar> {
    m.items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) => ModuleVar::of(v),
            _ => None,
        })
        .collect()
}

/// The variables a host can read and write: `.global` and `.const` ones defined in this module
/// (`__device__` and `__constant__`), in text order.
pub fn symbols(m: &Module) -> Vec<ModuleVar> {
    module_variables(m)
        .into_iter()
        .filter(|v| matches!(v.space, Space::Global | Space::Const) && !v.external)
        .collect()
}

/// A module's header directives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Header {
    /// `.version major.minor`.
    pub version: Option<(u32, u32)>,
    /// `.target` words (`sm_90`, `texmode_independent`, ...).
    pub target: Vec<String>,
    /// `.address_size`.
    pub address_size: Option<u32>,
}

impl Header {
    /// The `sm_NN` architecture of `.target`, as major·10 + minor (`sm_90a` is 90).
    pub fn sm(&self) -> Option<u32> {
        self.target.iter().find_map(|t| {
            let digits: String = t
                .strip_prefix("sm_")?
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
    }
}

/// The header of PTX text without parsing the rest: the directives before the first
/// declaration, comments skipped (what a loader checks before handing PTX to the driver).
pub fn header(ptx: &str) -> Header {
    let mut h = Header::default();
    let mut in_block_comment = false;
    for line in ptx.lines() {
        let mut l = line.trim();
        if in_block_comment {
            match l.find("*/") {
                Some(k) => {
                    l = l[k + 2..].trim();
                    in_block_comment = false;
                }
                None => continue,
            }
        }
        if let Some(k) = l.find("/*") {
            in_block_comment = !l[k..].contains("*/");
            l = l[..k].trim();
        }
        let l = l.split("//").next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        let mut words = l.split_whitespace();
        match words.next() {
            Some(".version") => {
                h.version = words.next().and_then(|v| {
                    let (a, b) = v.split_once('.')?;
                    Some((a.parse().ok()?, b.parse().ok()?))
                })
            }
            Some(".target") => {
                h.target = l[".target".len()..]
                    .split(',')
                    .map(|w| w.trim().to_string())
                    .filter(|w| !w.is_empty())
                    .collect()
            }
            Some(".address_size") => h.address_size = words.next().and_then(|n| n.parse().ok()),
            _ => break,
        }
    }
    h
}

/// The header of a parsed module.
pub fn header_of(m: &Module) -> Header {
    let mut h = Header::default();
    for i in &m.items {
        match i {
            Item::Version(v) => {
                h.version = v
                    .split_once('.')
                    .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
            }
            Item::Target(t) => h.target = t.clone(),
            Item::AddressSize(n) => h.address_size = Some(*n),
            _ => {}
        }
    }
    h
}

/// The name of an Itanium-mangled function or variable without its parameter types
/// (`_Z7stencilPdS_ii` → `stencil`, `_ZN2ns4coefE` → `ns::coef`, `_Z4axpyIdEvPT_` → `axpy`,
/// `_ZL5tablePd` → `table`), or `None` for a name that is not mangled. Only the leading name is
/// read: that is what users write for a kernel or a variable.
pub fn demangled_base(mangled: &str) -> Option<String> {
    let mut s = mangled.strip_prefix("_Z")?;
    s = s.strip_prefix('L').unwrap_or(s);
    let nested = s.starts_with('N');
    if nested {
        s = &s[1..];
    }
    let mut parts = Vec::new();
    loop {
        let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            break;
        }
        let n: usize = s[..digits].parse().ok()?;
        let id = s.get(digits..digits + n)?;
        parts.push(id);
        s = &s[digits + n..];
        if !nested {
            break;
        }
    }
    (!parts.is_empty()).then(|| parts.join("::"))
}

/// Why a kernel name resolves to no entry: one line, as `found …; accepted …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelNameError {
    /// What was written, and why it is not one kernel (`unknown kernel 'axpi'`).
    pub found: String,
    /// What would be (the kernels of the program, or a hint).
    pub accepted: String,
}

impl std::fmt::Display for KernelNameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "found {}; accepted {}", self.found, self.accepted)
    }
}

/// The name users read for an entry: `axpy<float>` for `_Z4axpyIfEvPT_S1_i`, `stencil` for
/// `_Z7stencilPdS_ii`, the name itself for an `extern "C"` one.
pub fn kernel_display_name(entry: &str) -> String {
    demangle::demangle(entry)
        .map(|d| d.name)
        .or_else(|| demangled_base(entry))
        .unwrap_or_else(|| entry.to_string())
}

/// `name` without whitespace, so that `axpy< float >` and `axpy<float>` compare equal.
fn squeezed(name: &str) -> String {
    name.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Which of `entries` (a module's `.entry` names) the kernel name `name` a user wrote means, by
/// index: the entry's own name (an `extern "C"` name or a mangled one), a name expression NVRTC
/// lowered (`lowered`: expression → mangled name), or a demangled name, with or without its
/// namespaces and template arguments (`stencil`, `ns::stencil`, `axpy<float>`,
/// `ns::axpy<float>`) when it names one entry. Used by `run`'s spec check and by
/// `inspect --kernel`, so both accept the same names and say the same when one is wrong.
pub fn resolve_kernel_name<S: AsRef<str>>(
    name: &str,
    entries: &[S],
    lowered: &BTreeMap<String, String>,
) -> Result<usize, KernelNameError> {
    let names: Vec<&str> = entries.iter().map(AsRef::as_ref).collect();
    let name = name.trim();
    if let Some(i) = names.iter().position(|e| *e == name) {
        return Ok(i);
    }
    if let Some(i) = lowered
        .get(name)
        .and_then(|l| names.iter().position(|e| e == l))
    {
        return Ok(i);
    }
    let want = squeezed(name);
    let last = |full: &str| {
        // The last `::` component outside template arguments.
        let mut depth = 0i32;
        let mut cut = 0;
        let b = full.as_bytes();
        for (i, c) in b.iter().enumerate() {
            match c {
                b'<' => depth += 1,
                b'>' => depth -= 1,
                b':' if depth == 0 && b.get(i + 1) == Some(&b':') => cut = i + 2,
                _ => {}
            }
        }
        full[cut..].to_string()
    };
    let full: Vec<String> = names
        .iter()
        .map(|e| squeezed(&kernel_display_name(e)))
        .collect();
    let base: Vec<Option<String>> = names.iter().map(|e| demangled_base(e)).collect();
    let by = |m: &dyn Fn(usize) -> bool| (0..names.len()).filter(|&i| m(i)).collect::<Vec<_>>();
    let mut matches = by(&|i| full[i] == want || last(&full[i]) == want);
    if matches.is_empty() {
        matches = by(&|i| {
            base[i]
                .as_deref()
                .is_some_and(|d| d == want || last(d) == want)
        });
    }
    let shown = |i: usize| {
        let d = kernel_display_name(names[i]);
        if d == names[i] {
            d
        } else {
            format!("{d} ({})", names[i])
        }
    };
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => {
            // `axpy<double>` when only `axpy<float>` was instantiated: say which exist.
            let stem = want.split('<').next().unwrap_or(&want).to_string();
            let instances = by(&|i| {
                base[i]
                    .as_deref()
                    .is_some_and(|d| d == stem || last(d) == stem)
            });
            let accepted = if !instances.is_empty() {
                let list: Vec<String> = instances
                    .iter()
                    .map(|&i| format!("'{}'", kernel_display_name(names[i])))
                    .collect();
                format!("an instantiated kernel: did you mean {}", list.join(" or "))
            } else if names.is_empty() {
                "a kernel of the program; the PTX has none".to_string()
            } else {
                format!(
                    "a kernel of the program: {}",
                    (0..names.len()).map(shown).collect::<Vec<_>>().join(", ")
                )
            };
            Err(KernelNameError {
                found: format!("unknown kernel '{name}'"),
                accepted,
            })
        }
        many => Err(KernelNameError {
            found: format!(
                "'{name}', which names {} kernels (overloads or template instances)",
                many.len()
            ),
            accepted: format!(
                "one of {}",
                many.iter()
                    .map(|&i| match demangle::demangle(names[i]) {
                        Some(d) => format!("{d} ({})", names[i]),
                        None => shown(i),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    const PTX: &str = r#"
// Generated by hand
/* a block
   comment */
.version 8.5
.target sm_90a, texmode_independent
.address_size 64

.const .align 8 .b8 coef[32];
.global .align 8 .b8 params[24];
.visible .global .align 4 .f32 gain = 0f3F800000;
.global .align 8 .f64 grid[4][8];
.const .align 16 .v4 .f32 quad;
.global .align 8 .v2 .f64 pairs[3];
.extern .global .align 4 .b8 elsewhere[16];
.global .align 4 .b8 open[];
.shared .align 4 .b8 tile[1024];
.visible .entry k(.param .u64 p)
{
	ret;
}
"#;

    /// The cases where the GPU runtime and the harness used to disagree: vector widths and
    /// `.extern`.
    #[test]
    fn sizes_count_vector_widths_and_extern_is_not_a_symbol() {
        let m = parse(PTX).module;
        let got: Vec<(String, Space, Option<u64>, bool)> = module_variables(&m)
            .into_iter()
            .map(|v| (v.name, v.space, v.bytes, v.external))
            .collect();
        let want = [
            ("coef", Space::Const, Some(32), false),
            ("params", Space::Global, Some(24), false),
            ("gain", Space::Global, Some(4), false),
            ("grid", Space::Global, Some(256), false),
            ("quad", Space::Const, Some(16), false),
            ("pairs", Space::Global, Some(48), false),
            ("elsewhere", Space::Global, Some(16), true),
            ("open", Space::Global, None, false),
            ("tile", Space::Shared, Some(1024), false),
        ];
        let want: Vec<(String, Space, Option<u64>, bool)> = want
            .iter()
            .map(|(n, s, b, e)| (n.to_string(), *s, *b, *e))
            .collect();
        assert_eq!(got, want);
        let names: Vec<String> = symbols(&m).into_iter().map(|v| v.name).collect();
        assert_eq!(
            names,
            ["coef", "params", "gain", "grid", "quad", "pairs", "open"]
        );
    }

    #[test]
    fn the_header_scan_agrees_with_the_parser() {
        let h = header(PTX);
        assert_eq!(h.version, Some((8, 5)));
        assert_eq!(h.target, ["sm_90a", "texmode_independent"]);
        assert_eq!(h.address_size, Some(64));
        assert_eq!(h.sm(), Some(90));
        assert_eq!(header_of(&parse(PTX).module), h);
        for (name, text) in crate::tests::FIXTURES {
            assert_eq!(header(text), header_of(&parse(text).module), "{name}");
            assert!(header(text).version.is_some(), "{name}");
        }
        assert_eq!(header("// nothing\n"), Header::default());
    }

    #[test]
    fn kernel_names_resolve_with_namespaces_and_template_arguments() {
        let entries = [
            "saxpy",
            "_Z7stencilPdS_ii",
            "_Z4axpyIfEvPT_S1_i",
            "_ZN2ns4scalIdEEvPT_",
            "_Z4scalIfEvPT_",
        ];
        let none = BTreeMap::new();
        let r = |n: &str| resolve_kernel_name(n, &entries, &none);
        assert_eq!(r("saxpy"), Ok(0));
        assert_eq!(r("_Z7stencilPdS_ii"), Ok(1));
        assert_eq!(r("stencil"), Ok(1));
        assert_eq!(r("axpy<float>"), Ok(2));
        assert_eq!(r("axpy< float >"), Ok(2));
        assert_eq!(r("axpy"), Ok(2));
        assert_eq!(r("ns::scal<double>"), Ok(3));
        assert_eq!(r("scal<double>"), Ok(3));
        assert_eq!(r("scal<float>"), Ok(4));
        let lowered = BTreeMap::from([("axpy<float>".to_string(), entries[2].to_string())]);
        assert_eq!(
            resolve_kernel_name("axpy<float>", &entries, &lowered),
            Ok(2)
        );
        assert_eq!(
            r("axpy<double>").unwrap_err().to_string(),
            "found unknown kernel 'axpy<double>'; accepted an instantiated kernel: did you mean 'axpy<float>'"
        );
        assert_eq!(
            r("scal").unwrap_err().to_string(),
            "found 'scal', which names 2 kernels (overloads or template instances); accepted one of ns::scal<double>(double*) (_ZN2ns4scalIdEEvPT_), scal<float>(float*) (_Z4scalIfEvPT_)"
        );
        assert_eq!(
            r("saxpi").unwrap_err().to_string(),
            "found unknown kernel 'saxpi'; accepted a kernel of the program: saxpy, stencil (_Z7stencilPdS_ii), axpy<float> (_Z4axpyIfEvPT_S1_i), ns::scal<double> (_ZN2ns4scalIdEEvPT_), scal<float> (_Z4scalIfEvPT_)"
        );
        let empty: [&str; 0] = [];
        assert_eq!(
            resolve_kernel_name("k", &empty, &none)
                .unwrap_err()
                .accepted,
            "a kernel of the program; the PTX has none"
        );
    }

    #[test]
    fn demangling_reads_the_leading_name() {
        assert_eq!(
            demangled_base("_Z7stencilPdS_ii").as_deref(),
            Some("stencil")
        );
        assert_eq!(demangled_base("_ZN2ns4coefE").as_deref(), Some("ns::coef"));
        assert_eq!(
            demangled_base("_ZN2ns6detail4stepEPd").as_deref(),
            Some("ns::detail::step")
        );
        assert_eq!(demangled_base("_Z4axpyIdEvPT_").as_deref(), Some("axpy"));
        assert_eq!(demangled_base("_ZL5tablePd").as_deref(), Some("table"));
        assert_eq!(
            demangled_base("_Z8ray_stepPKfS0_Ptfffffi").as_deref(),
            Some("ray_step")
        );
        assert_eq!(demangled_base("saxpy"), None);
        assert_eq!(demangled_base("_Z99x"), None);
    }
}
