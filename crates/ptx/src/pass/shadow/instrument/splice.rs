//! Code at the two ends of a function body, where the [`crate::rewrite::Rewriter`] (which
//! anchors code to instructions) cannot put it: before the first label (code after a label
//! would run again at every branch to it) and after the last instruction (out-of-line code that
//! only branches reach).

use crate::decode::Decoded;
use crate::model::*;
use crate::op::Control;

/// Whether control can run past the last instruction of `d` (the body does not end in an
/// unguarded `ret`, `exit` or `bra`): code appended at the end needs a `ret` before it.
pub(crate) fn falls_off_the_end(d: &Decoded) -> bool {
    d.insts.last().zip(d.ops.last()).is_none_or(|(i, op)| {
        i.guard.is_some() || !(op.is_return() || op.control() == Some(Control::Bra))
    })
}

/// Puts `at_start` before the first label or instruction of `function`'s body (after its
/// declarations and line info) and `at_end` after its last statement; both get fresh ids.
pub(crate) fn splice(
    module: &mut Module,
    function: &str,
    at_start: Vec<Statement>,
    at_end: Vec<Statement>,
) {
    if at_start.is_empty() && at_end.is_empty() {
        return;
    }
    let mut next = module.next_inst_id;
    let mut fresh = |code: Vec<Statement>| -> Vec<Statement> {
        code.into_iter()
            .map(|mut s| {
                if let Statement::Inst(i) = &mut s {
                    i.id = InstId(next);
                    next += 1;
                }
                s
            })
            .collect()
    };
    let (at_start, at_end) = (fresh(at_start), fresh(at_end));
    let Some(body) = module
        .functions_mut()
        .find(|f| f.name == function && f.body.is_some())
        .and_then(|f| f.body.as_mut())
    else {
        return;
    };
    let top = body
        .iter()
        .position(|s| {
            matches!(
                s,
                Statement::Label(..) | Statement::Inst(_) | Statement::BlockStart(_)
            )
        })
        .unwrap_or(body.len());
    body.splice(top..top, at_start);
    body.extend(at_end);
    module.next_inst_id = next;
}
