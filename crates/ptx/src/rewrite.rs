//! The rewriting toolkit passes use: batched edits of one function (code inserted before or after
//! an instruction, new registers, new kernel parameters) applied in one walk of the body, and new
//! module globals.
//!
//! A [`Rewriter`] is made for one function of a module ([`Rewriter::new`] scans it once: its
//! instructions, the register names it declares and the names it could shadow), collects edits,
//! and [`Rewriter::apply`] rebuilds the body once, so a pass that inserts code at every
//! instruction costs O(body), not O(body) per edit.
//!
//! What inserted code keeps from the instruction it is attached to (its *anchor*):
//! - **its `.loc`**: code goes right next to the anchor, after any `.loc` or label before it, so
//!   it sits under the anchor's source line and line attribution is unchanged;
//! - **its guard**, with [`Guarding::Keep`]: every inserted instruction without a guard of its own
//!   gets the anchor's (`@%p1` or `@!%p1`), so it runs exactly when the anchor does, except the
//!   `st.param`/`ld.param` that stage a call's arguments (ptxas refuses them predicated; the
//!   guarded `call` decides);
//! - **nothing else**: inserted instructions get fresh [`InstId`]s from the module at
//!   [`Rewriter::apply`], whatever ids they were built with.
//!
//! New registers are declared as one range per type per rewrite (`.reg .f64 %mxf64_<3>;`), under
//! a prefix that no name the function declares starts with, so they can never collide with the
//! compiler's `%f`, `%fd`, `%r`, `%rd`, `%p` ranges or with each other.

use crate::model::*;
use std::collections::{HashMap, HashSet};

/// Why an edit cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewriteError {
    /// The function to rewrite is not in the module, or is only a prototype.
    #[error("no function '{0}' with a body in the module")]
    NoFunction(String),
    /// An edit names an instruction of another function (or none).
    #[error("instruction {id} is not in function '{function}'")]
    NotInFunction {
        /// The instruction named.
        id: InstId,
        /// The function being rewritten.
        function: String,
    },
    /// Code after a branch, return or exit would not run as the instruction's continuation.
    #[error(
        "cannot insert after instruction {id} ({opcode}): it transfers control; insert before it"
    )]
    AfterControlTransfer {
        /// The anchor.
        id: InstId,
        /// Its opcode.
        opcode: String,
    },
    /// The anchor writes its own guard predicate, so a copy of the guard after it would read the
    /// new value, not the one that decided whether the anchor ran.
    #[error("cannot insert after instruction {id} with its guard: it writes its own guard predicate {guard}")]
    GuardRewritten {
        /// The anchor.
        id: InstId,
        /// Its guard register.
        guard: String,
    },
    /// Parameters can only be added to kernels: a device function's callers would not pass them.
    #[error(
        "'{0}' is a device function (.func); parameters can only be added to kernels (.entry)"
    )]
    NotAKernel(String),
    /// A register type PTX does not have.
    #[error("'{0}' is not a register type; accepted: {REG_TYPES_LIST}")]
    BadRegisterType(String),
}

/// Whether inserted code runs under its anchor's guard predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarding {
    /// Inserted instructions without a guard of their own get the anchor's: they run exactly
    /// when the anchor does.
    Keep,
    /// Inserted instructions run whenever control passes the anchor, whatever its guard says.
    Ignore,
}

/// Register types a `.reg` declaration accepts (without the dot).
const REG_TYPES: [&str; 17] = [
    "pred", "b16", "b32", "b64", "b128", "u16", "u32", "u64", "s16", "s32", "s64", "f16", "f16x2",
    "bf16", "bf16x2", "f32", "f64",
];
const REG_TYPES_LIST: &str =
    "pred, b16, b32, b64, b128, u16, u32, u64, s16, s32, s64, f16, f16x2, bf16, bf16x2, f32, f64";

/// What an edit needs to know about the instruction it is attached to.
#[derive(Debug, Clone)]
struct Anchor {
    guard: Option<Guard>,
    opcode: String,
    /// The next statement is not its continuation ([`crate::op::Op::transfers_control`]).
    transfers_control: bool,
    writes_guard: bool,
}

/// Batched edits to one function; see the module docs.
#[derive(Debug, Clone)]
pub struct Rewriter {
    function: String,
    is_kernel: bool,
    anchors: HashMap<InstId, Anchor>,
    before: HashMap<InstId, Vec<Statement>>,
    after: HashMap<InstId, Vec<Statement>>,
    /// The prefix of every new register name; no name the function declares starts with it.
    reg_base: String,
    /// New registers per type, in the order types were first asked for.
    regs: Vec<(String, u32)>,
    params: Vec<Param>,
    /// Names a new parameter must not take: the function's parameters and variables, and every
    /// module-scope name (a parameter would shadow a global of the same name in the body, and a
    /// local would shadow the parameter).
    taken_names: HashSet<String>,
}

impl Rewriter {
    /// Starts a rewrite of `function` (kernel or device function with a body), scanning it once.
    pub fn new(module: &Module, function: &str) -> Result<Rewriter, RewriteError> {
        let f = module
            .functions()
            .find(|f| f.name == function && f.body.is_some())
            .ok_or_else(|| RewriteError::NoFunction(function.to_string()))?;
        let mut declared: Vec<&str> = Vec::new();
        let mut anchors = HashMap::new();
        let mut taken_names: HashSet<String> = f.params.iter().map(|p| p.name.clone()).collect();
        taken_names.extend(module_scope_names(module));
        for s in f.body.iter().flatten() {
            match s {
                Statement::Var(v) => {
                    taken_names.insert(v.name.clone());
                }
                Statement::Reg(d) => declared.extend(d.names.iter().map(|n| match n {
                    RegName::Range { prefix, .. } => prefix.as_str(),
                    RegName::Single(name) => name.as_str(),
                })),
                Statement::Inst(i) => {
                    let op = i.decode();
                    let writes_guard = i
                        .guard
                        .as_ref()
                        .is_some_and(|g| crate::op::defs_uses(i, &op).0.contains(&g.reg.as_str()));
                    anchors.insert(
                        i.id,
                        Anchor {
                            guard: i.guard.clone(),
                            opcode: i.opcode.clone(),
                            transfers_control: op.transfers_control(),
                            writes_guard,
                        },
                    );
                }
                _ => {}
            }
        }
        // `.reg` parameters of a `.func` are registers of its body too.
        declared.extend(
            f.params
                .iter()
                .chain(f.returns.iter().flatten())
                .map(|p| p.name.as_str()),
        );
        Ok(Rewriter {
            function: function.to_string(),
            is_kernel: f.kind == FunctionKind::Entry,
            anchors,
            before: HashMap::new(),
            after: HashMap::new(),
            reg_base: unused_prefix(&declared),
            regs: Vec::new(),
            params: Vec::new(),
            taken_names,
        })
    }

    /// A new register of type `ty` (`f64` or `.f64`), declared when the rewrite is applied.
    pub fn reg(&mut self, ty: &str) -> Result<String, RewriteError> {
        let ty = ty.trim_start_matches('.');
        if !REG_TYPES.contains(&ty) {
            return Err(RewriteError::BadRegisterType(ty.to_string()));
        }
        let k = match self.regs.iter_mut().find(|(t, _)| t == ty) {
            Some((_, n)) => {
                *n += 1;
                *n - 1
            }
            None => {
                self.regs.push((ty.to_string(), 1));
                0
            }
        };
        Ok(format!("{}{ty}_{k}", self.reg_base))
    }

    /// Inserts `code` right before instruction `at` (after any `.loc` or label before it).
    pub fn insert_before(
        &mut self,
        at: InstId,
        code: Vec<Statement>,
        guarding: Guarding,
    ) -> Result<(), RewriteError> {
        let anchor = self.anchor(at)?;
        let code = guarded(code, anchor, guarding);
        self.before.entry(at).or_default().extend(code);
        Ok(())
    }

    /// Inserts `code` right after instruction `at`, still under its `.loc`. Refused after a
    /// branch, return or exit, and, with [`Guarding::Keep`], after an instruction that writes its
    /// own guard predicate.
    pub fn insert_after(
        &mut self,
        at: InstId,
        code: Vec<Statement>,
        guarding: Guarding,
    ) -> Result<(), RewriteError> {
        let anchor = self.anchor(at)?;
        if anchor.transfers_control {
            return Err(RewriteError::AfterControlTransfer {
                id: at,
                opcode: anchor.opcode.clone(),
            });
        }
        if guarding == Guarding::Keep && anchor.writes_guard {
            let guard = anchor.guard.as_ref().map(|g| g.reg.clone());
            return Err(RewriteError::GuardRewritten {
                id: at,
                guard: guard.unwrap_or_default(),
            });
        }
        let code = guarded(code, anchor, guarding);
        self.after.entry(at).or_default().extend(code);
        Ok(())
    }

    /// Appends a kernel parameter `.param .ty name` (the launch then passes one more argument,
    /// last), named `name` or, if that is taken, `name_1`, `name_2`...; returns the name.
    pub fn add_param(&mut self, ty: &str, name: &str) -> Result<String, RewriteError> {
        if !self.is_kernel {
            return Err(RewriteError::NotAKernel(self.function.clone()));
        }
        let name = unique_name(name, |n| self.taken_names.contains(n));
        self.taken_names.insert(name.clone());
        self.params.push(Param::new(
            &format!(".{}", ty.trim_start_matches('.')),
            &name,
        ));
        Ok(name)
    }

    /// Applies every edit in one walk of the body; inserted instructions get fresh ids.
    pub fn apply(self, module: &mut Module) -> Result<(), RewriteError> {
        let mut next_id = module.next_inst_id;
        let f = module
            .functions_mut()
            .find(|f| f.name == self.function && f.body.is_some())
            .ok_or_else(|| RewriteError::NoFunction(self.function.clone()))?;
        f.params.extend(self.params);
        let Some(body) = f.body.as_mut() else {
            return Err(RewriteError::NoFunction(self.function));
        };
        let old = std::mem::take(body);
        let inserted: usize = self
            .before
            .values()
            .chain(self.after.values())
            .map(Vec::len)
            .sum();
        let mut new = Vec::with_capacity(old.len() + inserted + self.regs.len());
        let decls = self.regs.iter().map(|(ty, count)| {
            Statement::Reg(RegDecl {
                ty: format!(".{ty}"),
                names: vec![RegName::Range {
                    prefix: format!("{}{ty}_", self.reg_base),
                    count: *count,
                }],
                line: SrcLine(0),
            })
        });
        // Declarations go after the existing ones, before the first other statement.
        let decl_at = old
            .iter()
            .position(|s| !matches!(s, Statement::Reg(_)))
            .unwrap_or(old.len());
        let mut decls = Some(decls);
        let (mut before, mut after) = (self.before, self.after);
        let mut fresh = |code: Vec<Statement>, out: &mut Vec<Statement>| {
            for mut s in code {
                if let Statement::Inst(i) = &mut s {
                    i.id = InstId(next_id);
                    next_id += 1;
                }
                out.push(s);
            }
        };
        for (k, s) in old.into_iter().enumerate() {
            if k == decl_at {
                new.extend(decls.take().into_iter().flatten());
            }
            match s {
                Statement::Inst(i) => {
                    let id = i.id;
                    if let Some(code) = before.remove(&id) {
                        fresh(code, &mut new);
                    }
                    new.push(Statement::Inst(i));
                    if let Some(code) = after.remove(&id) {
                        fresh(code, &mut new);
                    }
                }
                other => new.push(other),
            }
        }
        new.extend(decls.take().into_iter().flatten());
        *body = new;
        module.next_inst_id = next_id;
        Ok(())
    }

    fn anchor(&self, at: InstId) -> Result<&Anchor, RewriteError> {
        self.anchors
            .get(&at)
            .ok_or_else(|| RewriteError::NotInFunction {
                id: at,
                function: self.function.clone(),
            })
    }
}

/// Gives every unguarded instruction of `code` the anchor's guard, under [`Guarding::Keep`],
/// except parameter-space loads and stores: ptxas refuses predicated accesses to call parameters
/// ("Illegal to predicate instruction 'st.param'"), and they only stage a call's arguments in
/// its own block, so they run unguarded and the guarded `call` decides.
fn guarded(mut code: Vec<Statement>, anchor: &Anchor, guarding: Guarding) -> Vec<Statement> {
    if let (Guarding::Keep, Some(g)) = (guarding, &anchor.guard) {
        for s in &mut code {
            if let Statement::Inst(i) = s {
                if i.guard.is_none() && !i.decode().is_param_access() {
                    i.guard = Some(g.clone());
                }
            }
        }
    }
    code
}

/// `%mx`, else `%mxa`, `%mxb`, ...: the first base no declared name or range prefix starts with.
/// New names are the base, a type and `_k`; a declared name could only equal one if it started
/// with the base, since the base ends in a letter and range suffixes are digits.
fn unused_prefix(declared: &[&str]) -> String {
    let free = |base: &str| !declared.iter().any(|d| d.starts_with(base));
    std::iter::once("%mx".to_string())
        .chain(('a'..='z').map(|c| format!("%mx{c}")))
        .chain((0u32..).map(|k| format!("%mx{k}x")))
        .find(|b| free(b))
        .unwrap_or_else(|| "%mx".to_string())
}

/// `name`, or `name_1`, `name_2`, ... : the first that `taken` refuses.
pub(crate) fn unique_name(name: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(name) {
        return name.to_string();
    }
    (1u32..)
        .map(|k| format!("{name}_{k}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| name.to_string())
}

/// Every name declared at module scope: variables and functions.
fn module_scope_names(module: &Module) -> impl Iterator<Item = String> + '_ {
    module.items.iter().filter_map(|item| match item {
        Item::Var(v) => Some(v.name.clone()),
        Item::Function(f) => Some(f.name.clone()),
        _ => None,
    })
}

/// `name`, or `name_1`, `name_2`... if any name in the module (module scope, a parameter, a
/// function-scope variable) already is: a name a new module-scope variable can take without
/// being shadowed inside any function.
pub(crate) fn unique_module_name(module: &Module, name: &str) -> String {
    let mut taken: HashSet<String> = module_scope_names(module).collect();
    for f in module.functions() {
        taken.extend(
            f.params
                .iter()
                .chain(f.returns.iter().flatten())
                .map(|p| p.name.clone()),
        );
        taken.extend(f.body.iter().flatten().filter_map(|s| match s {
            Statement::Var(v) => Some(v.name.clone()),
            _ => None,
        }));
    }
    unique_name(name, |n| taken.contains(n))
}

/// Adds a module global `.global .align ALIGN .TY name[len];` (zero-initialised, as PTX
/// initialises `.global` variables without an initialiser) before the first function, named
/// `name` or, if any name in the module (module scope, a parameter, a function-scope variable)
/// already is, `name_1`, `name_2`...; returns the name.
///
/// Every such name is avoided because a parameter or local of the same name would shadow the
/// global inside that function.
pub fn add_global(module: &mut Module, ty: &str, align: u32, name: &str, len: u64) -> String {
    let name = unique_module_name(module, name);
    let decl = VarDecl {
        attrs: vec![
            ".global".into(),
            ".align".into(),
            align.to_string(),
            format!(".{}", ty.trim_start_matches('.')),
        ],
        name: name.clone(),
        dims: vec![Some(len)],
        init: None,
        line: SrcLine(0),
    };
    let at = first_function(module);
    module.items.insert(at, Item::Var(decl));
    name
}

/// The index of the module's first function item (definition or prototype), or the end: where
/// module-scope declarations go so that every function can use them.
pub(crate) fn first_function(module: &Module) -> usize {
    module
        .items
        .iter()
        .position(|i| matches!(i, Item::Function(_)))
        .unwrap_or(module.items.len())
}

/// A new instruction `opcode.modifiers operands;`, for inserting; its id is assigned when the
/// rewrite is applied.
pub fn instruction(opcode: &str, modifiers: &[&str], operands: Vec<Operand>) -> Statement {
    Statement::Inst(Instruction {
        id: InstId(0),
        guard: None,
        opcode: opcode.to_string(),
        modifiers: modifiers.iter().map(|m| m.to_string()).collect(),
        operands,
        line: SrcLine(0),
    })
}

/// An integer immediate, written in decimal.
pub fn int(value: i128) -> Operand {
    Operand::Imm(Imm::Int {
        value,
        hex: false,
        unsigned: false,
    })
}

/// A call of the device function `function` with no return value, as NVRTC writes call
/// sequences: a braced block declaring one `.param` per argument, the stores, then the call.
/// `args` are (PTX type without the dot, value): a register or an immediate.
///
/// The call is `call`, not `call.uni`: inserted code may run under a divergent guard.
pub fn call(function: &str, args: &[(&str, Operand)]) -> Vec<Statement> {
    let mut code = vec![Statement::BlockStart(SrcLine(0))];
    let names: Vec<String> = (0..args.len())
        .map(|k| format!("mantissa_param{k}"))
        .collect();
    for ((ty, _), name) in args.iter().zip(&names) {
        code.push(Statement::Var(VarDecl {
            attrs: vec![".param".into(), format!(".{ty}")],
            name: name.clone(),
            dims: Vec::new(),
            init: None,
            line: SrcLine(0),
        }));
    }
    for ((ty, value), name) in args.iter().zip(&names) {
        code.push(instruction(
            "st",
            &["param", ty],
            vec![
                Operand::Addr {
                    base: name.clone(),
                    offset: 0,
                },
                value.clone(),
            ],
        ));
    }
    code.push(instruction(
        "call",
        &[],
        vec![
            Operand::Symbol(function.to_string()),
            Operand::List(names.into_iter().map(Operand::Symbol).collect()),
        ],
    ));
    code.push(Statement::BlockEnd(SrcLine(0)));
    code
}

#[cfg(test)]
#[path = "rewrite_tests.rs"]
mod tests;
