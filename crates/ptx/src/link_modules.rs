//! Linking an application's own modules into one: [`link_modules`]. `mantissa trace` writes one
//! PTX per spec, and an application whose kernels come from several translation units (each
//! `.cu` file is a module of its own), or a Python program whose kernels are compiled one module
//! each, loads several. Whole-program modules (nvcc's default, NVRTC's) never refer to each other,
//! so one module holding all of them, each keeping its own names, runs each kernel as its own
//! module did.
//!
//! The rules, each checked (a violation is a [`LinkError`], one line):
//! - **Header**: the newest `.version` (PTX ISA versions only add); the same `.target` words
//!   and `.address_size` in every module — one program is built for one target.
//! - **Names**: each module is appended after the ones before it. A name a module defines
//!   (function, kernel or variable) that an earlier module defines too — `static` helpers,
//!   template instances, nvcc's `$str` strings, a kernel two files both define — is renamed in
//!   that module, everywhere it is used there (definition, calls, addresses, operands and
//!   initialisers), to `NAME_mK` (K the module's position, underscores added until unique);
//!   [`Linked::renamed`] says what each module's names became, so launches can follow. A name
//!   that is a function's own (a parameter, a local, a label) is never renamed inside it.
//! - **Declarations**: an `.extern` declaration (`vprintf`, `malloc`) an earlier module already
//!   declares is dropped. A name one module declares `.extern` and another defines is relocatable
//!   device code (`-rdc`), whose linking is nvlink's job: refused.
//! - **Line info**: later modules' `.file`s are renumbered after the earlier ones', and their
//!   `.loc`s with them; their DWARF sections and the inlined-at part of their `.loc`s (labels into
//!   their own `.debug_str`) are dropped, as [`crate::link::merge_runtime`] does for a runtime.
//! - **Instruction ids**: later modules' instructions get ids after the earlier ones'.

use crate::link::{address_size, appended, is_extern, target_of, version_of, LinkError};
use crate::model::*;
use std::collections::{HashMap, HashSet};

/// The modules as one, and what each module's renamed names became.
#[derive(Debug, Clone)]
pub struct Linked {
    /// The linked module.
    pub module: Module,
    /// Per input module, in order: old name → new name (empty for the first module).
    pub renamed: Vec<HashMap<String, String>>,
}

/// Links `modules` into one; see the module docs for the rules.
pub fn link_modules(modules: &[Module]) -> Result<Linked, LinkError> {
    let Some(first) = modules.first() else {
        return Ok(Linked {
            module: Module::default(),
            renamed: Vec::new(),
        });
    };
    let (mut version, target, size) = (
        version_of(first, "first")?,
        target_of(first, "first")?,
        address_size(first),
    );
    for m in &modules[1..] {
        let v = version_of(m, "other")?;
        if v.0 > version.0 {
            version = v;
        }
        let t = target_of(m, "other")?;
        if t != target {
            return Err(LinkError::ModuleTargets {
                first: target.join(", "),
                other: t.join(", "),
            });
        }
        if address_size(m) != size {
            return Err(LinkError::AddressSize {
                user: size,
                runtime: address_size(m),
            });
        }
    }
    let mut items: Vec<Item> = first
        .items
        .iter()
        .map(|i| match i {
            Item::Version(_) => Item::Version(version.1.clone()),
            other => other.clone(),
        })
        .collect();
    let (mut defined, mut declared) = names(first);
    let mut renamed = vec![HashMap::new()];
    let mut next_id = first.next_inst_id;
    let mut file_base = max_file(first);
    for (k, m) in modules.iter().enumerate().skip(1) {
        let (defs, decls) = names(m);
        for n in &defs {
            if declared.contains(n) && !defined.contains(n) {
                return Err(LinkError::AcrossModules(n.clone()));
            }
        }
        if let Some(n) = decls.iter().find(|n| defined.contains(*n)) {
            return Err(LinkError::AcrossModules(n.clone()));
        }
        let mut map = HashMap::new();
        for n in defs.iter().filter(|n| defined.contains(*n)) {
            let mut new = format!("{n}_m{k}");
            while defined.contains(&new) || defs.contains(&new) {
                new.push('_');
            }
            map.insert(n.clone(), new);
        }
        let mut m = m.clone();
        rename(&mut m, &map);
        for item in m.items {
            match item {
                Item::Version(_)
                | Item::Target(_)
                | Item::AddressSize(_)
                | Item::Section { .. } => {}
                Item::Var(v) if is_extern(&v) => {
                    if declared.insert(v.name.clone()) {
                        items.push(Item::Var(v));
                    }
                }
                Item::Function(f) if f.body.is_none() => {
                    if declared.insert(f.name.clone()) {
                        items.push(Item::Function(f));
                    }
                }
                Item::Function(mut f) => {
                    appended(&mut f, &mut next_id, file_base);
                    defined.insert(f.name.clone());
                    items.push(Item::Function(f));
                }
                Item::Var(v) => {
                    defined.insert(v.name.clone());
                    items.push(Item::Var(v));
                }
                Item::File {
                    index,
                    path,
                    rest,
                    line,
                } => items.push(Item::File {
                    index: index + file_base,
                    path,
                    rest,
                    line,
                }),
                Item::Verbatim(v) => items.push(Item::Verbatim(v)),
            }
        }
        file_base += max_file(&modules[k]);
        renamed.push(map);
    }
    Ok(Linked {
        module: Module {
            items,
            next_inst_id: next_id,
        },
        renamed,
    })
}

/// The names `m` defines (variables that are not `.extern`, functions with bodies) and those it
/// declares only.
fn names(m: &Module) -> (HashSet<String>, HashSet<String>) {
    let (mut defs, mut decls) = (HashSet::new(), HashSet::new());
    for item in &m.items {
        match item {
            Item::Var(v) if is_extern(v) => {
                decls.insert(v.name.clone());
            }
            Item::Var(v) => {
                defs.insert(v.name.clone());
            }
            Item::Function(f) if f.body.is_none() => {
                decls.insert(f.name.clone());
            }
            Item::Function(f) => {
                defs.insert(f.name.clone());
            }
            _ => {}
        }
    }
    (defs, decls)
}

fn max_file(m: &Module) -> u32 {
    m.items
        .iter()
        .filter_map(|i| match i {
            Item::File { index, .. } => Some(*index),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// Renames module-scope names of `m` by `map` wherever they are used (see the module docs).
fn rename(m: &mut Module, map: &HashMap<String, String>) {
    if map.is_empty() {
        return;
    }
    for item in &mut m.items {
        match item {
            Item::Var(v) => {
                if let Some(n) = map.get(&v.name) {
                    v.name = n.clone();
                }
                if let Some(init) = &mut v.init {
                    *init = rename_text(init, map);
                }
            }
            Item::Function(f) => {
                if let Some(n) = map.get(&f.name) {
                    f.name = n.clone();
                }
                // The function's own names: parameters, locals and labels.
                let params = f.params.iter().chain(f.returns.iter().flatten());
                let mut locals: HashSet<String> = params.map(|p| p.name.clone()).collect();
                let Some(body) = &mut f.body else { continue };
                locals.extend(body.iter().filter_map(|s| match s {
                    Statement::Var(v) => Some(v.name.clone()),
                    Statement::Label(l, _) => Some(l.clone()),
                    _ => None,
                }));
                for s in body.iter_mut() {
                    if let Statement::Inst(i) = s {
                        for op in &mut i.operands {
                            rename_operand(op, map, &locals);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

fn rename_operand(op: &mut Operand, map: &HashMap<String, String>, locals: &HashSet<String>) {
    match op {
        Operand::Addr { base: name, .. } | Operand::Symbol(name) => {
            if let Some(n) = map.get(name.as_str()).filter(|_| !locals.contains(name)) {
                *name = n.clone();
            }
        }
        Operand::Vector(v) | Operand::List(v) => {
            for o in v {
                rename_operand(o, map, locals);
            }
        }
        Operand::Not(o) => rename_operand(o, map, locals),
        Operand::Raw(text) => *text = rename_text(text, map),
        Operand::Reg(_) | Operand::Imm(_) => {}
    }
}

/// `text` with every whole identifier that `map` names replaced (PTX identifiers: letters,
/// digits, `_`, `$`, and a leading `%`).
fn rename_text(text: &str, map: &HashMap<String, String>) -> String {
    let is_id = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%';
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(map.get(word.as_str()).unwrap_or(word));
        word.clear();
    };
    for c in text.chars() {
        if is_id(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
#[path = "link_modules_tests.rs"]
mod tests;
