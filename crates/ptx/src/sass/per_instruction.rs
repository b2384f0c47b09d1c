//! The SASS ptxas makes of each PTX instruction.
//!
//! Line info is the only link nvdisasm keeps between a SASS instruction and the PTX it came
//! from, and source lines hold many PTX instructions. So the module is printed with every
//! original `.loc` dropped (nvcc 13's `.loc ... inlined_at` form included), one `.file` and a
//! `.loc` of its own before each instruction, numbered over the whole module: line k names the
//! k-th instruction, whichever SASS function ptxas inlines it into. Line info changes no code:
//! relined, original-lined and unlined PTX assemble to the same SASS (tested on every shipped
//! example in `crates/shadow/tests/pin_contraction.rs`), so the counts per instruction are those
//! of the program as built.
//!
//! What ptxas's own subroutines (`$__internal_*`: division and square-root slow paths) carry is
//! the line of whatever instruction comes last before them; their counts land there.

use super::{disassemble, Sass, SassError};
use crate::model::{InstId, Item, Loc, Module, SrcLine, Statement};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The path the relined module's one `.file` names.
pub const RELINED_FILE: &str = "mantissa-relined.ptx";

/// SASS opcode counts per PTX instruction (function, instruction id), for one architecture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstSass {
    /// The architecture the module was assembled for (`sm_90`).
    pub arch: String,
    ops: HashMap<(String, InstId), BTreeMap<String, u32>>,
}

impl InstSass {
    /// Attributes `sass` (of a module printed by [`relined`]) to the instructions `lines` names:
    /// line k + 1 is `lines[k]`.
    pub fn from_lines(sass: &Sass, lines: &[(String, InstId)], arch: &str) -> InstSass {
        let mut ops: HashMap<(String, InstId), BTreeMap<String, u32>> = HashMap::new();
        for l in sass.lines.iter().filter(|l| l.file == RELINED_FILE) {
            let Some(inst) = (l.line as usize).checked_sub(1).and_then(|k| lines.get(k)) else {
                continue;
            };
            let entry = ops.entry(inst.clone()).or_default();
            for (op, n) in &l.ops {
                *entry.entry(op.clone()).or_default() += n;
            }
        }
        InstSass {
            arch: arch.to_string(),
            ops,
        }
    }

    /// The SASS instructions by base opcode (`FFMA` for `FFMA.FTZ`) that instruction `id` of
    /// `function` became, over every copy ptxas made of it (unrolling, inlining); empty when it
    /// left none.
    pub fn ops(&self, function: &str, id: InstId) -> BTreeMap<String, u32> {
        self.ops
            .get(&(function.to_string(), id))
            .cloned()
            .unwrap_or_default()
    }

    /// How many `opcode` instructions instruction `id` of `function` became.
    pub fn count(&self, function: &str, id: InstId, opcode: &str) -> u32 {
        self.ops
            .get(&(function.to_string(), id))
            .and_then(|o| o.get(opcode))
            .copied()
            .unwrap_or(0)
    }
}

/// `module` with every `.loc` and `.file` replaced: one `.file` ([`RELINED_FILE`]) and one
/// `.loc` per instruction, line k + 1 for the instruction the returned list names at k.
pub fn relined(module: &Module) -> (Module, Vec<(String, InstId)>) {
    const FILE: u32 = 1;
    let mut out = module.clone();
    let mut lines: Vec<(String, InstId)> = Vec::new();
    out.items.retain(|i| !matches!(i, Item::File { .. }));
    for f in out.functions_mut() {
        let name = f.name.clone();
        let Some(body) = f.body.as_mut() else {
            continue;
        };
        let mut new = Vec::with_capacity(body.len() * 2);
        for s in std::mem::take(body) {
            match s {
                Statement::Loc(_) => {}
                Statement::Inst(i) => {
                    lines.push((name.clone(), i.id));
                    new.push(Statement::Loc(Loc {
                        file: FILE,
                        line: lines.len() as u32,
                        col: 1,
                        inlined: None,
                        src: SrcLine(0),
                    }));
                    new.push(Statement::Inst(i));
                }
                other => new.push(other),
            }
        }
        *body = new;
    }
    // After the functions, where nvcc puts its `.file`s (ptxas accepts `.loc`s before it).
    out.items.push(Item::File {
        index: FILE,
        path: RELINED_FILE.to_string(),
        rest: String::new(),
        line: SrcLine(0),
    });
    (out, lines)
}

/// The SASS of each instruction of `module` for `arch`: [`relined`], assembled with
/// `ptxas -lineinfo`, disassembled with `nvdisasm -g -c`.
pub fn per_instruction(
    ptxas: &Path,
    nvdisasm: &Path,
    module: &Module,
    arch: &str,
) -> Result<InstSass, SassError> {
    let (relined, lines) = relined(module);
    let sass = disassemble(ptxas, nvdisasm, &relined.to_string(), arch)?;
    Ok(InstSass::from_lines(&sass, &lines, arch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
        .visible .entry k(.param .u64 p)\n{\n.reg .f32 %f<4>;\n.reg .b64 %rd<2>;\n\
        .loc 1 5 3\nld.param.u64 %rd1, [p];\nld.global.f32 %f1, [%rd1];\n\
        .loc 1 6 3, function_name $L__info_string0, inlined_at 1 9 2\n\
        mul.f32 %f2, %f1, %f1;\nadd.f32 %f3, %f2, %f1;\n.loc 1 7 3\n\
        st.global.f32 [%rd1], %f3;\nret;\n}\n\t.file\t1 \"/src/k.cu\"\n";

    #[test]
    fn every_instruction_gets_its_own_line_and_nothing_else_changes() {
        let m = parse(PTX).module;
        let (r, lines) = relined(&m);
        let k = m.function("k").unwrap();
        let ids: Vec<InstId> = k.instructions().map(|i| i.id).collect();
        assert_eq!(
            lines,
            ids.iter()
                .map(|&i| ("k".to_string(), i))
                .collect::<Vec<_>>()
        );
        let rk = r.function("k").unwrap();
        assert_eq!(
            rk.instructions().collect::<Vec<_>>(),
            k.instructions().collect::<Vec<_>>()
        );
        let locs: Vec<(u32, u32, bool)> = rk
            .body
            .iter()
            .flatten()
            .filter_map(|s| match s {
                Statement::Loc(l) => Some((l.file, l.line, l.inlined.is_some())),
                _ => None,
            })
            .collect();
        assert_eq!(locs, (1..=6).map(|n| (1, n, false)).collect::<Vec<_>>());
        assert_eq!(r.files(), [(1, RELINED_FILE)]);
        // Each `.loc` right before its instruction.
        let body = rk.body.as_ref().unwrap();
        for (k, s) in body.iter().enumerate() {
            if let Statement::Inst(_) = s {
                assert!(matches!(body[k - 1], Statement::Loc(_)), "{k}");
            }
        }
    }

    #[test]
    fn counts_are_attributed_by_line() {
        let m = parse(PTX).module;
        let (_, lines) = relined(&m);
        let text = format!(
            "\t.section\t.text.k,\"ax\",@progbits\n\
             \t//## File \"{RELINED_FILE}\", line 3\n\
             /*0000*/ FFMA R1, R2, R2, R2 ;\n\
             \t//## File \"{RELINED_FILE}\", line 5\n\
             /*0010*/ STG.E [R4], R1 ;\n\
             /*0020*/ STG.E [R4], R1 ;\n\
             \t//## File \"/elsewhere.cu\", line 4\n\
             /*0030*/ FADD R1, R1, R1 ;\n\
             \t//## File \"{RELINED_FILE}\", line 99\n\
             /*0040*/ EXIT ;\n"
        );
        let s = InstSass::from_lines(&super::super::parse_nvdisasm(&text), &lines, "sm_90");
        let (_, mul) = &lines[2];
        let (_, add) = &lines[3];
        let (_, st) = &lines[4];
        assert_eq!(s.count("k", *mul, "FFMA"), 1);
        assert!(
            s.ops("k", *add).is_empty(),
            "another file's line 4 is not the add's"
        );
        assert_eq!(s.count("k", *st, "STG"), 2);
        assert_eq!(s.count("other", *st, "STG"), 0);
        assert_eq!(s.arch, "sm_90");
    }
}
