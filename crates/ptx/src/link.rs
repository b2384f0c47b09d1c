//! Merging a device runtime into a user's module: [`merge_runtime`] takes the PTX of a CUDA
//! header compiled with relocatable device code (`mantissa_gpu::runtime` does that) and returns
//! one module holding the user's code and the runtime's functions and globals, which the driver
//! loads with one `cuModuleLoadData` (no device linker involved).
//!
//! Why relocatable device code: NVRTC 13 drops every `__device__` function a translation unit
//! does not call unless it compiles with `-rdc=true`, `extern "C" __device__ __noinline__`
//! included (checked with NVRTC 13.0.88); with it, each `extern "C"` function is kept as a
//! `.visible .func` under its plain name, and an `extern __device__` variable becomes an
//! `.extern .global` declaration, which this merge resolves against the user's definition.
//!
//! The rules, each checked (a violation is a [`LinkError`], one line):
//! - **`.target`**: the merged module keeps the user's. The runtime's architecture must not be
//!   newer than the user's (its code could use instructions the user's target lacks); an
//!   architecture-specific runtime (`sm_90a`) needs exactly the user's target; other target
//!   words of the runtime (`debug`, `texmode_...`) must be the user's too.
//! - **`.address_size`**: equal (absent means 32, as in PTX).
//! - **`.version`**: the newer of the two. A newer runtime ISA is what its instructions were
//!   written for, and PTX ISA versions only add; the driver accepts it whenever mantissa's NVRTC
//!   is no newer than the driver, which mantissa requires anyway (its cubins are built by that
//!   NVRTC), and `Gpu::load_ptx` refuses a module newer than the driver before the driver sees
//!   it. Keeping the user's older number instead would make ptxas reject the runtime's newer
//!   instructions with a message about an instruction the user never wrote.
//! - **Names**: a name the runtime defines (function or global) that the user's module also
//!   defines is a clash. A user `.extern` declaration of a runtime name (a pass's prototype of a
//!   runtime function, say) is resolved: the declaration goes and the runtime's definition,
//!   placed before every user function, serves the calls; its parameters must match. A runtime
//!   `.extern .global` must be defined by the user's module (a pass's counter array, say); that
//!   definition is moved before the runtime if it came after a function.
//! - **Line info**: the runtime's `.file`s are renumbered after the user's, and its `.loc`s with
//!   them, so source lines of user code keep their files. The runtime's DWARF sections and the
//!   inlined-call part of its `.loc`s (labels into its own `.debug_str`) are dropped: they would
//!   clash with the user's labels, and no analysis reads runtime code's inlining.
//! - **Instruction ids**: the runtime's instructions get ids after the user's, so the user's ids
//!   (what pass reports name) are unchanged.
//!
//! Where things go: user header, the user's module-scope items up to the first function, the
//! runtime's globals and functions, then the rest of the user's module and the runtime's
//! `.file`s. PTX needs a function declared before a call and a variable before a use; this
//! order gives both for runtime code calling into itself and user code calling the runtime.

use crate::model::*;
use crate::parse::parse;
use std::collections::{HashMap, HashSet};

/// Why a runtime cannot be merged into a module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The runtime's PTX has statements the parser could not read (a runtime must parse fully).
    #[error("the runtime's PTX is not understood at line {line}: {message}")]
    RuntimeUnparsed {
        /// Line of the runtime's PTX.
        line: u32,
        /// What was not understood.
        message: String,
    },
    /// A module without `.version` or `.target`.
    #[error("the {module} module has no {directive} directive")]
    MissingDirective {
        /// `user` or `runtime`.
        module: &'static str,
        /// `.version` or `.target`.
        directive: &'static str,
    },
    /// A `.version` that is not `MAJOR.MINOR`.
    #[error("the {module} module's .version '{version}' is not MAJOR.MINOR")]
    BadVersion {
        /// `user` or `runtime`.
        module: &'static str,
        /// As written.
        version: String,
    },
    /// Targets that cannot share one module.
    #[error("the runtime's .target {runtime} cannot join a module for .target {user}: {why}; compile the runtime for the user's architecture")]
    TargetMismatch {
        /// The user's target words, comma-separated.
        user: String,
        /// The runtime's.
        runtime: String,
        /// Which rule fails.
        why: &'static str,
    },
    /// Different `.address_size`s.
    #[error("the runtime's .address_size {runtime} differs from the user's {user}")]
    AddressSize {
        /// The user's (32 when absent).
        user: u32,
        /// The runtime's.
        runtime: u32,
    },
    /// A name both modules define.
    #[error("'{0}' is defined by both the module and the runtime; rename one (runtime names start with mantissa_)")]
    Clash(String),
    /// A runtime `.extern` that the module does not define as a global variable (runtimes
    /// may use the module's globals, never call its functions).
    #[error(
        "the runtime needs '{0}' (.extern) but the module does not define it as a global variable"
    )]
    Unresolved(String),
    /// Application modules built for different targets ([`crate::link_modules`]).
    #[error("the modules target {first} and {other}: one program is built for one target")]
    ModuleTargets {
        /// The first module's target words.
        first: String,
        /// The other's.
        other: String,
    },
    /// A name one application module declares `.extern` and another defines.
    #[error("'{0}' is declared .extern in one module and defined in another (relocatable device code, linked by nvlink): not supported")]
    AcrossModules(String),
    /// A user prototype of a runtime function whose parameters differ from the definition.
    #[error("the module declares '{name}' as {user} but the runtime defines it as {runtime}")]
    SignatureMismatch {
        /// The function.
        name: String,
        /// The user's parameter types.
        user: String,
        /// The runtime's.
        runtime: String,
    },
}

/// Merges the runtime `runtime_ptx` into `user`; see the module docs for the rules.
pub fn merge_runtime(user: &Module, runtime_ptx: &str) -> Result<Module, LinkError> {
    let parsed = parse(runtime_ptx);
    if let Some(d) = parsed.diagnostics.first() {
        return Err(LinkError::RuntimeUnparsed {
            line: d.line,
            message: format!("{}: {}", d.message, d.text),
        });
    }
    merge(user, parsed.module)
}

fn merge(user: &Module, runtime: Module) -> Result<Module, LinkError> {
    let version = merged_version(user, &runtime)?;
    check_target(user, &runtime)?;
    let (ua, ra) = (address_size(user), address_size(&runtime));
    if ua != ra {
        return Err(LinkError::AddressSize {
            user: ua,
            runtime: ra,
        });
    }

    let user_defs = definitions(user);
    let runtime_defs = definitions(&runtime);
    for name in runtime_defs.keys() {
        if user_defs.contains_key(name) {
            return Err(LinkError::Clash(name.clone()));
        }
    }
    // User declarations of runtime names: resolved by the runtime's definitions.
    let mut resolved_user_decls: HashSet<String> = HashSet::new();
    for item in &user.items {
        match item {
            Item::Function(f) if f.body.is_none() => {
                if let Some(Def::Function(def)) = runtime_defs.get(&f.name) {
                    check_signature(f, def)?;
                    resolved_user_decls.insert(f.name.clone());
                }
            }
            Item::Var(v) if is_extern(v) && runtime_defs.contains_key(&v.name) => {
                resolved_user_decls.insert(v.name.clone());
            }
            _ => {}
        }
    }
    // Runtime declarations: resolved by the user's definitions (or the runtime's own).
    let mut needed_user_vars: HashSet<String> = HashSet::new();
    for item in &runtime.items {
        let (name, is_decl) = match item {
            Item::Var(v) => (&v.name, is_extern(v)),
            Item::Function(f) => (&f.name, f.body.is_none()),
            _ => continue,
        };
        if !is_decl || runtime_defs.contains_key(name) {
            continue;
        }
        match user_defs.get(name) {
            Some(Def::Var) => {
                needed_user_vars.insert(name.clone());
            }
            // A runtime calling into user code would need the user's function before the runtime,
            // and the user's may call the runtime: not supported (no runtime needs it).
            Some(Def::Function(_)) | None => return Err(LinkError::Unresolved(name.clone())),
        }
    }

    let runtime_defined: HashSet<String> = runtime_defs.into_keys().collect();
    let first_fn = crate::rewrite::first_function(user);
    let mut head = Vec::new();
    let mut moved = Vec::new();
    let mut tail = Vec::new();
    for (k, item) in user.items.iter().enumerate() {
        let name = match item {
            Item::Var(v) => Some(&v.name),
            Item::Function(f) => Some(&f.name),
            _ => None,
        };
        let declares_resolved = match item {
            Item::Var(v) => is_extern(v),
            Item::Function(f) => f.body.is_none(),
            _ => false,
        } && name.is_some_and(|n| resolved_user_decls.contains(n));
        if declares_resolved {
            continue;
        }
        let item = match item {
            Item::Version(_) => Item::Version(version.clone()),
            other => other.clone(),
        };
        if k < first_fn {
            head.push(item);
        } else if matches!(&item, Item::Var(v) if needed_user_vars.contains(&v.name)) {
            moved.push(item);
        } else {
            tail.push(item);
        }
    }

    // The runtime's items: declarations resolved above dropped, files renumbered, ids fresh.
    let file_base = user
        .items
        .iter()
        .filter_map(|i| match i {
            Item::File { index, .. } => Some(*index),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let mut next_id = user.next_inst_id;
    let mut runtime_vars = Vec::new();
    let mut runtime_fns = Vec::new();
    let mut runtime_files = Vec::new();
    for item in runtime.items {
        match item {
            Item::Var(v) if is_extern(&v) && !runtime_defined.contains(&v.name) => {}
            Item::Var(v) => runtime_vars.push(Item::Var(v)),
            Item::Function(mut f) => {
                appended(&mut f, &mut next_id, file_base);
                runtime_fns.push(Item::Function(f));
            }
            Item::File {
                index,
                path,
                rest,
                line,
            } => runtime_files.push(Item::File {
                index: index + file_base,
                path,
                rest,
                line,
            }),
            Item::Version(_)
            | Item::Target(_)
            | Item::AddressSize(_)
            | Item::Section { .. }
            | Item::Verbatim(_) => {}
        }
    }

    let mut items = head;
    items.extend(moved);
    items.extend(runtime_vars);
    items.extend(runtime_fns);
    items.extend(tail);
    items.extend(runtime_files);
    Ok(Module {
        items,
        next_inst_id: next_id,
    })
}

/// Function `f` of a module appended after another: its instructions get ids from `next_id` on,
/// its `.loc`s the files renumbered by `file_base`, without their inlined-at part (labels into
/// its own `.debug_str`, which is dropped).
pub(crate) fn appended(f: &mut Function, next_id: &mut u32, file_base: u32) {
    for s in f.body.iter_mut().flatten() {
        match s {
            Statement::Inst(i) => {
                i.id = InstId(*next_id);
                *next_id += 1;
            }
            Statement::Loc(l) => {
                l.file += file_base;
                l.inlined = None;
            }
            _ => {}
        }
    }
}

/// What a module defines under a name.
enum Def<'m> {
    Var,
    Function(&'m Function),
}

/// Names a module defines (not declares): variables without `.extern`, functions with bodies.
fn definitions(m: &Module) -> HashMap<String, Def<'_>> {
    let mut out = HashMap::new();
    for item in &m.items {
        match item {
            Item::Var(v) if !is_extern(v) => {
                out.insert(v.name.clone(), Def::Var);
            }
            Item::Function(f) if f.body.is_some() => {
                out.insert(f.name.clone(), Def::Function(f));
            }
            _ => {}
        }
    }
    out
}

pub(crate) fn is_extern(v: &VarDecl) -> bool {
    v.attrs.iter().any(|a| a == ".extern")
}

/// The parameter types of a function, as `(.b64, .b32) -> (.b32)`, for comparison and messages.
fn signature(f: &Function) -> String {
    let types = |ps: &[Param]| {
        ps.iter()
            .map(|p| {
                let mut t = p.attrs.join(" ");
                for d in &p.dims {
                    t.push_str(&d.map_or("[]".to_string(), |n| format!("[{n}]")));
                }
                t
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &f.returns {
        Some(r) => format!("({}) -> ({})", types(&f.params), types(r)),
        None => format!("({})", types(&f.params)),
    }
}

fn check_signature(decl: &Function, def: &Function) -> Result<(), LinkError> {
    let (user, runtime) = (signature(decl), signature(def));
    if user != runtime || decl.kind != def.kind {
        return Err(LinkError::SignatureMismatch {
            name: def.name.clone(),
            user,
            runtime,
        });
    }
    Ok(())
}

pub(crate) fn version_of(
    m: &Module,
    which: &'static str,
) -> Result<((u32, u32), String), LinkError> {
    let text = m
        .items
        .iter()
        .find_map(|i| match i {
            Item::Version(v) => Some(v.clone()),
            _ => None,
        })
        .ok_or(LinkError::MissingDirective {
            module: which,
            directive: ".version",
        })?;
    let bad = || LinkError::BadVersion {
        module: which,
        version: text.clone(),
    };
    let (major, minor) = text.split_once('.').ok_or_else(bad)?;
    let number = (
        major.parse().map_err(|_| bad())?,
        minor.parse().map_err(|_| bad())?,
    );
    Ok((number, text))
}

fn merged_version(user: &Module, runtime: &Module) -> Result<String, LinkError> {
    let (u, u_text) = version_of(user, "user")?;
    let (r, r_text) = version_of(runtime, "runtime")?;
    Ok(if r > u { r_text } else { u_text })
}

pub(crate) fn target_of(m: &Module, which: &'static str) -> Result<Vec<String>, LinkError> {
    m.items
        .iter()
        .find_map(|i| match i {
            Item::Target(t) => Some(t.clone()),
            _ => None,
        })
        .ok_or(LinkError::MissingDirective {
            module: which,
            directive: ".target",
        })
}

/// `sm_90a` → (90, "a"); `None` for words that are not architectures.
fn arch_of(word: &str) -> Option<(u32, &str)> {
    let rest = word.strip_prefix("sm_")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    Some((rest[..digits].parse().ok()?, &rest[digits..]))
}

fn check_target(user: &Module, runtime: &Module) -> Result<(), LinkError> {
    let (u, r) = (target_of(user, "user")?, target_of(runtime, "runtime")?);
    let mismatch = |why| LinkError::TargetMismatch {
        user: u.join(", "),
        runtime: r.join(", "),
        why,
    };
    let arch = |t: &[String]| {
        t.iter()
            .find_map(|w| arch_of(w).map(|(num, suffix)| (w.clone(), num, suffix.to_string())))
    };
    let (Some((u_word, u_num, _)), Some((r_word, r_num, r_suffix))) = (arch(&u), arch(&r)) else {
        return Err(mismatch("both must name an sm_ architecture"));
    };
    if r_num > u_num {
        return Err(mismatch("the runtime's architecture is newer"));
    }
    if !r_suffix.is_empty() && r_word != u_word {
        return Err(mismatch(
            "an architecture-specific runtime needs exactly its own target",
        ));
    }
    if r.iter()
        .filter(|w| arch_of(w).is_none())
        .any(|w| !u.contains(w))
    {
        return Err(mismatch("the runtime has target options the module lacks"));
    }
    Ok(())
}

pub(crate) fn address_size(m: &Module) -> u32 {
    m.items
        .iter()
        .find_map(|i| match i {
            Item::AddressSize(n) => Some(*n),
            _ => None,
        })
        .unwrap_or(32)
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
