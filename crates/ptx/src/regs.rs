//! The registers of one function, interned: every declared register (ranges by arithmetic, so
//! `%fd<100000>` costs one entry) and every register read without a declaration (special
//! registers such as `%tid.x`) gets a dense [`RegId`], so analyses index vectors instead of
//! hashing names.
//!
//! The table answers what a declaration says (type, name) and which prefixes are taken. It does
//! not allocate registers for rewrites (that is the rewriter's job); it gives it what it needs:
//! the declarations, [`RegTable::unused_prefix`] and [`RegTable::is_declared`].

use crate::model::{Function, Instruction, Operand, RegName, Statement};
use crate::op::{OpKind, ValueType};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash (rustc's) with a final mix: register names are short and not attacker-chosen, and
/// SipHash dominated the decode of large functions.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn finish(&self) -> u64 {
        // The multiply leaves the low bits (which pick the bucket) depending on the low input
        // bytes only, and register names share their first bytes: mix (splitmix64's finaliser).
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A hash map with [`FxHasher`].
pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A register of one function, dense from 0: declared registers first (in declaration order,
/// ranges expanded), then undeclared ones in order of first appearance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct RegId(pub u32);

impl fmt::Display for RegId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// A register's declared type: `.f64`, `.v2 .f32`, or what the declaration said when it is not
/// a type this crate knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegType {
    /// The element type, when the declaration names a known one.
    pub ty: Option<ValueType>,
    /// `.v2`/`.v4` declarations; 1 otherwise.
    pub vector: u32,
    /// The declaration's type text as written (`.f64`).
    pub text: String,
}

impl RegType {
    fn parse(text: &str) -> RegType {
        let mut ty = None;
        let mut vector = 1;
        for w in text.split_whitespace() {
            let w = w.trim_start_matches('.');
            if let Some(t) = ValueType::parse(w) {
                ty = Some(t);
            } else if let Some(n) = w.strip_prefix('v').and_then(|n| n.parse().ok()) {
                vector = n;
            }
        }
        RegType {
            ty,
            vector,
            text: text.to_string(),
        }
    }
}

/// One declaration: a range (`%fd<7>` is prefix `%fd`, count 7) or a single name.
#[derive(Debug, Clone)]
struct Decl {
    prefix: String,
    /// `None` for a single name.
    count: Option<u32>,
    first: u32,
    ty: usize,
}

/// The interned registers of one function (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct RegTable {
    decls: Vec<Decl>,
    /// Range prefix → indices into `decls` (a prefix may be declared twice, in nested blocks).
    ranges: FxMap<String, Vec<usize>>,
    singles: FxMap<String, u32>,
    types: Vec<RegType>,
    declared: u32,
    /// Registers read or written but not declared (special registers), after the declared ones.
    extra: Vec<String>,
    extra_index: FxMap<String, u32>,
}

impl RegTable {
    /// The declarations of `f` (every `.reg` of the body, nested blocks included).
    pub fn of(f: &Function) -> RegTable {
        let mut t = RegTable::default();
        for s in f.body.iter().flatten() {
            let Statement::Reg(d) = s else { continue };
            let ty = match t.types.iter().position(|x| x.text == d.ty) {
                Some(k) => k,
                None => {
                    t.types.push(RegType::parse(&d.ty));
                    t.types.len() - 1
                }
            };
            for n in &d.names {
                let (prefix, count) = match n {
                    RegName::Range { prefix, count } => (prefix.clone(), Some(*count)),
                    RegName::Single(x) => (x.clone(), None),
                };
                let first = t.declared;
                t.declared += count.unwrap_or(1);
                let k = t.decls.len();
                match count {
                    Some(_) => t.ranges.entry(prefix.clone()).or_default().push(k),
                    None => {
                        t.singles.entry(prefix.clone()).or_insert(first);
                    }
                }
                t.decls.push(Decl {
                    prefix,
                    count,
                    first,
                    ty,
                });
            }
        }
        t
    }

    /// The declared register `name`, if declared.
    pub fn declared(&self, name: &str) -> Option<RegId> {
        if !self.singles.is_empty() {
            if let Some(&k) = self.singles.get(name) {
                return Some(RegId(k));
            }
        }
        // `%fd12` is prefix `%fd` and index 12; a prefix may itself end in digits (`%r1<3>`
        // declares `%r10`..`%r12`), so every split inside the trailing digits is tried.
        let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
        let start = name.len() - digits;
        for split in start..name.len() {
            let (prefix, number) = name.split_at(split);
            if number.len() > 1 && number.starts_with('0') {
                continue;
            }
            let Some(list) = self.ranges.get(prefix) else {
                continue;
            };
            let Ok(k) = number.parse::<u32>() else {
                continue;
            };
            for &d in list {
                let decl = &self.decls[d];
                if decl.count.is_some_and(|c| k < c) {
                    return Some(RegId(decl.first + k));
                }
            }
        }
        None
    }

    /// Whether `name` is declared in the function.
    pub fn is_declared(&self, name: &str) -> bool {
        self.declared(name).is_some()
    }

    /// The id of `name`, interning it when it is not declared (a special register).
    pub fn intern(&mut self, name: &str) -> RegId {
        if let Some(id) = self.lookup(name) {
            return id;
        }
        let id = self.declared + self.extra.len() as u32;
        self.extra.push(name.to_string());
        self.extra_index.insert(name.to_string(), id);
        RegId(id)
    }

    /// The id of `name`, declared or already interned.
    pub fn lookup(&self, name: &str) -> Option<RegId> {
        self.declared(name).or_else(|| {
            (!self.extra_index.is_empty())
                .then(|| self.extra_index.get(name).map(|&k| RegId(k)))
                .flatten()
        })
    }

    /// How many ids there are (declared and interned): ids are `0..len()`.
    pub fn len(&self) -> usize {
        self.declared as usize + self.extra.len()
    }

    /// Whether the function has no registers at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first id after the declared registers: interned (undeclared) ones start here.
    pub fn declared_count(&self) -> u32 {
        self.declared
    }

    fn decl_of(&self, id: RegId) -> Option<&Decl> {
        if id.0 >= self.declared {
            return None;
        }
        // Declarations are in id order.
        let k = self.decls.partition_point(|d| d.first <= id.0);
        self.decls.get(k.checked_sub(1)?)
    }

    /// The register's name.
    pub fn name(&self, id: RegId) -> String {
        match self.decl_of(id) {
            Some(d) => match d.count {
                Some(_) => format!("{}{}", d.prefix, id.0 - d.first),
                None => d.prefix.clone(),
            },
            None => self
                .extra
                .get((id.0 - self.declared) as usize)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The declared type; `None` for undeclared (special) registers.
    pub fn reg_type(&self, id: RegId) -> Option<&RegType> {
        self.decl_of(id).map(|d| &self.types[d.ty])
    }

    /// The declared element type, if declared with a known one.
    pub fn value_type(&self, id: RegId) -> Option<ValueType> {
        self.reg_type(id).and_then(|t| t.ty)
    }

    /// The declared element type of the register named `name`.
    pub fn type_of(&self, name: &str) -> Option<ValueType> {
        self.declared(name).and_then(|id| self.value_type(id))
    }

    /// Whether `name` is declared `.f64`.
    pub fn is_f64(&self, name: &str) -> bool {
        self.type_of(name) == Some(ValueType::F64)
    }

    /// The declarations, as (prefix or name, count for a range, type).
    pub fn declarations(&self) -> impl Iterator<Item = (&str, Option<u32>, &RegType)> {
        self.decls
            .iter()
            .map(|d| (d.prefix.as_str(), d.count, &self.types[d.ty]))
    }

    /// A register prefix under which no name `{prefix}{n}` is declared: `base`, with `x`s
    /// appended until it is free.
    pub fn unused_prefix(&self, base: &str) -> String {
        // `p` + digits can equal `q` + digits only when one prefix is the other plus digits.
        fn digits_after(long: &str, short: &str) -> bool {
            long.strip_prefix(short)
                .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
        }
        let clashes = |p: &str| {
            self.decls.iter().any(|d| match d.count {
                None => digits_after(&d.prefix, p) && d.prefix.len() > p.len(),
                Some(_) => digits_after(&d.prefix, p) || digits_after(p, &d.prefix),
            })
        };
        let mut prefix = base.to_string();
        while clashes(&prefix) {
            prefix.push('x');
        }
        prefix
    }

    /// Whether `inst` moves a float's bits into or out of integer registers: a `mov` between
    /// registers whose declared types are a float and a non-float (`mov.b64 %rd1, %fd1`), or a
    /// vector pack/unpack. `testp`/`copysign` are [`crate::op::Op::is_bit_reinterpretation`].
    pub fn reinterprets(&self, inst: &Instruction, kind: &OpKind) -> bool {
        match kind {
            OpKind::Move { reinterpret: true } => true,
            OpKind::Move { reinterpret: false } => {
                let float = |o: Option<&Operand>| match o {
                    Some(Operand::Reg(r)) => self.type_of(r).map(ValueType::is_float),
                    _ => None,
                };
                match (float(inst.operands.first()), float(inst.operands.get(1))) {
                    (Some(a), Some(b)) => a != b,
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn table(decls: &str) -> RegTable {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{decls}\nret;\n}}\n"
        );
        let m = parse(&text).module;
        let t = m.kernels().next().map(RegTable::of).unwrap_or_default();
        t
    }

    #[test]
    fn ranges_are_interned_by_arithmetic() {
        let mut t = table(
            ".reg .pred %p<3>;\n.reg .f32 %f<4>;\n.reg .f64 %fd<100000>;\n.reg .b32 %a, %b;\n.reg .b32 %r1<3>;",
        );
        assert_eq!(t.declared_count(), 3 + 4 + 100_000 + 2 + 3);
        assert_eq!(t.declared("%p0"), Some(RegId(0)));
        assert_eq!(t.declared("%f3"), Some(RegId(6)));
        assert_eq!(t.declared("%f4"), None);
        // `%fd12` is not `%f` + "d12".
        assert_eq!(t.declared("%fd12"), Some(RegId(7 + 12)));
        assert_eq!(t.declared("%fd99999"), Some(RegId(7 + 99_999)));
        assert_eq!(t.declared("%fd012"), None);
        assert_eq!(t.declared("%b"), Some(RegId(100_008)));
        // A prefix ending in a digit.
        assert_eq!(t.declared("%r12"), Some(RegId(100_009 + 2)));
        assert_eq!(t.type_of("%fd5"), Some(ValueType::F64));
        assert!(t.is_f64("%fd5") && !t.is_f64("%f1"));
        for id in [0, 6, 19, 100_006, 100_008, 100_011] {
            assert_eq!(t.declared(&t.name(RegId(id))), Some(RegId(id)), "{id}");
        }
        // Special registers are interned after the declared ones, once.
        let tid = t.intern("%tid.x");
        assert_eq!(tid, RegId(t.declared_count()));
        assert_eq!(t.intern("%tid.x"), tid);
        assert_eq!(t.name(tid), "%tid.x");
        assert_eq!(t.reg_type(tid), None);
        assert_eq!(t.len(), t.declared_count() as usize + 1);
    }

    #[test]
    fn unused_prefix_avoids_every_declaration() {
        let t = table(".reg .f32 %m<4>;\n.reg .f64 %mdf<2>;\n.reg .b32 %mdfx1;");
        let p = t.unused_prefix("%mdf");
        assert_eq!(p, "%mdfxx");
        assert!((0..50).all(|k| !t.is_declared(&format!("{p}{k}"))));
    }
}
