//! Tests of the warp-collective instructions ([`super::warp`]): each result against what PTX's
//! definition gives, worked out here lane by lane; divergence, partial warps, guards, and the
//! errors.

use super::tests::{go, kernel};
use super::warp::UNDEFINED;
use super::*;

const REGS: &str = "\t.reg .pred %p<8>;\n\t.reg .b32 %r<40>;\n\t.reg .b64 %rd<8>;";

/// The prologue every kernel here starts with: `%r1` = `%tid.x`, `%r2` = `%laneid`, `%rd4` =
/// the address of output word `%tid.x`.
const PROLOGUE: &str = "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %laneid;\n\
    \tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n";

/// Runs `body` on one block of `threads` threads with `outputs` words per thread (output `j` of
/// thread `t` at word `j·threads + t`); the words, or the error.
fn warp_run(body: &str, threads: u32, outputs: usize) -> Result<Vec<u32>, InterpError> {
    let ptx = kernel(&format!("{PROLOGUE}{body}"), REGS);
    let n = threads as usize * outputs;
    let (mem, r) = go(&ptx, "k", Launch::linear(1, threads), |m| {
        vec![Arg::u64(m.alloc(4 * n))]
    });
    r?;
    let bytes = mem.read(GLOBAL_BASE, 4 * n)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// `st.global.u32` of `reg` as output `j` of a block of `threads`.
fn store(j: usize, threads: u32, reg: &str) -> String {
    format!(
        "\tst.global.u32 [%rd4+{}], {reg};\n",
        4 * j * threads as usize
    )
}

/// A butterfly over two full warps sums each warp's values in every lane.
#[test]
fn a_butterfly_sums_each_warp_in_every_lane() {
    let mut body = String::from("\tadd.u32 %r3, %r1, 1;\n");
    for offset in [16, 8, 4, 2, 1] {
        body += &format!(
            "\tshfl.sync.bfly.b32 %r4, %r3, {offset}, 31, -1;\n\tadd.u32 %r3, %r3, %r4;\n"
        );
    }
    body += &store(0, 64, "%r3");
    let got = warp_run(&body, 64, 1).unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<u32> = (0..64u32)
        .map(|t| (32 * (t / 32) + 1..=32 * (t / 32) + 32).sum())
        .collect();
    assert_eq!(got, want);
}

/// Lanes on two sides of a branch see their own side as the active mask; after the branch they
/// meet again, and a partial warp (40 threads: lanes 0–7 of warp 1) has only its lanes.
#[test]
fn divergent_lanes_see_their_own_active_mask_and_meet_after() {
    let t = 40;
    let body = format!(
        "\tsetp.lt.u32 %p1, %r2, 10;\n\t@%p1 bra $A;\n\tactivemask.b32 %r4;\n\tbra $J;\n\
         $A:\n\tactivemask.b32 %r4;\n$J:\n\tactivemask.b32 %r5;\n\
         \tand.b32 %r6, %r2, 1;\n\tsetp.eq.u32 %p2, %r6, 1;\n\
         \tvote.sync.ballot.b32 %r7, %p2, %r5;\n\
         \tvote.sync.any.pred %p3, %p1, %r5;\n\tselp.u32 %r8, 1, 0, %p3;\n\
         \tvote.sync.all.pred %p4, %p1, %r5;\n\tselp.u32 %r9, 1, 0, %p4;\n\
         \tvote.sync.uni.pred %p5, !%p2, %r5;\n\tselp.u32 %r10, 1, 0, %p5;\n\
         \tredux.sync.add.u32 %r11, %r1, %r5;\n\
         {}{}{}{}{}{}{}",
        store(0, t, "%r4"),
        store(1, t, "%r5"),
        store(2, t, "%r7"),
        store(3, t, "%r8"),
        store(4, t, "%r9"),
        store(5, t, "%r10"),
        store(6, t, "%r11"),
    );
    let got = warp_run(&body, t, 7).unwrap_or_else(|e| panic!("{e}"));
    let out = |j: usize, tid: usize| got[j * t as usize + tid];
    for tid in 0..t as usize {
        let lane = tid % 32;
        let (all, sum) = if tid < 32 {
            (u32::MAX, (0..32).sum::<u32>())
        } else {
            (0xff, (32..40).sum())
        };
        let side = if lane < 10 { 0x3ff } else { !0x3ffu32 };
        assert_eq!(
            out(0, tid),
            side & all,
            "activemask inside the branch, thread {tid}"
        );
        assert_eq!(out(1, tid), all, "activemask after it, thread {tid}");
        assert_eq!(
            out(2, tid),
            0xaaaa_aaaa & all,
            "ballot of odd lanes, thread {tid}"
        );
        assert_eq!(out(3, tid), 1, "any lane below 10, thread {tid}");
        assert_eq!(
            out(4, tid),
            u32::from(tid >= 32),
            "all lanes below 10, thread {tid}"
        );
        assert_eq!(out(5, tid), 0, "odd lanes are not uniform, thread {tid}");
        assert_eq!(out(6, tid), sum, "redux.add of %tid, thread {tid}");
    }
}

/// `shfl.sync`'s four modes with clamps and segments, lane by lane, and a source lane that does
/// not run the shuffle.
#[test]
fn shuffles_pick_their_source_lanes_as_ptx_defines() {
    let t = 32;
    let body = format!(
        "\tmul.lo.u32 %r3, %r2, 10;\n\
         \tshfl.sync.down.b32 %r4, %r3, 1, 31, -1;\n\
         \tshfl.sync.up.b32 %r5, %r3, 2, 0, -1;\n\
         \tadd.u32 %r6, %r2, 3;\n\tshfl.sync.idx.b32 %r7, %r3, %r6, 31, -1;\n\
         \tshfl.sync.bfly.b32 %r8, %r3, 1, 0x181f, -1;\n\
         \tshfl.sync.down.b32 %r9, %r3, 3, 0x181f, -1;\n\
         \tsetp.lt.u32 %p1, %r2, 16;\n\tmov.u32 %r10, 7;\n\
         \t@!%p1 bra $S;\n\
         \tadd.u32 %r11, %r2, 16;\n\tshfl.sync.idx.b32 %r10, %r3, %r11, 31, 0xffff;\n\
         $S:\n{}{}{}{}{}{}",
        store(0, t, "%r4"),
        store(1, t, "%r5"),
        store(2, t, "%r7"),
        store(3, t, "%r8"),
        store(4, t, "%r9"),
        store(5, t, "%r10"),
    );
    let got = warp_run(&body, t, 6).unwrap_or_else(|e| panic!("{e}"));
    let out = |j: usize, lane: u32| got[j * 32 + lane as usize];
    for lane in 0..32u32 {
        let down = if lane < 31 { lane + 1 } else { lane };
        assert_eq!(out(0, lane), 10 * down, "down 1, lane {lane}");
        let up = if lane >= 2 { lane - 2 } else { lane };
        assert_eq!(out(1, lane), 10 * up, "up 2, lane {lane}");
        assert_eq!(
            out(2, lane),
            10 * ((lane + 3) % 32),
            "idx lane+3, lane {lane}"
        );
        // c = 0x181f: segments of 8 lanes (segment mask 0b11000, a width of 8), so the
        // largest lane is the segment's base + 7; the partner lane ^ 1 stays in the segment.
        assert_eq!(
            out(3, lane),
            10 * (lane ^ 1),
            "bfly 1 in segments of 8, lane {lane}"
        );
        // c = 0x181f: segments of 8, clamp 31 → max lane = segment base + 7.
        let seg_max = (lane & 0x18) | 7;
        let d = if lane + 3 <= seg_max { lane + 3 } else { lane };
        assert_eq!(out(4, lane), 10 * d, "down 3 in segments of 8, lane {lane}");
        let idx = if lane < 16 { UNDEFINED as u32 } else { 7 };
        assert_eq!(
            out(5, lane),
            idx,
            "idx from a lane not running it, lane {lane}"
        );
    }
}

/// `redux.sync` on signed and unsigned values, the bitwise ones, `match.any`, and lanes a guard
/// keeps out of a shuffle.
#[test]
fn reductions_matches_and_guarded_lanes() {
    let t = 32;
    let body = format!(
        "\tsub.s32 %r3, %r2, 5;\n\
         \tredux.sync.min.s32 %r4, %r3, -1;\n\tredux.sync.max.s32 %r5, %r3, -1;\n\
         \tredux.sync.min.u32 %r6, %r3, -1;\n\tredux.sync.max.u32 %r7, %r3, -1;\n\
         \tshl.b32 %r8, 1, %r2;\n\tredux.sync.or.b32 %r9, %r8, -1;\n\
         \tredux.sync.xor.b32 %r10, %r2, -1;\n\tredux.sync.and.b32 %r11, %r8, -1;\n\
         \tand.b32 %r12, %r2, 3;\n\tmatch.any.sync.b32 %r13, %r12, -1;\n\
         \tsetp.lt.u32 %p1, %r2, 16;\n\tmov.u32 %r14, 0;\n\
         \t@%p1 shfl.sync.bfly.b32 %r14, %r2, 8, 31, 0xffff;\n\
         {}{}{}{}{}{}{}{}{}",
        store(0, t, "%r4"),
        store(1, t, "%r5"),
        store(2, t, "%r6"),
        store(3, t, "%r7"),
        store(4, t, "%r9"),
        store(5, t, "%r10"),
        store(6, t, "%r11"),
        store(7, t, "%r13"),
        store(8, t, "%r14"),
    );
    let got = warp_run(&body, t, 9).unwrap_or_else(|e| panic!("{e}"));
    let out = |j: usize, lane: u32| got[j * 32 + lane as usize];
    for lane in 0..32u32 {
        assert_eq!(out(0, lane) as i32, -5);
        assert_eq!(out(1, lane) as i32, 26);
        assert_eq!(out(2, lane), 0, "unsigned minimum: lane 5's 0");
        assert_eq!(
            out(3, lane),
            (-1i32) as u32,
            "unsigned maximum: lane 4's -1"
        );
        assert_eq!(out(4, lane), u32::MAX);
        assert_eq!(out(5, lane), (0..32u32).fold(0, |x, y| x ^ y));
        assert_eq!(out(6, lane), 0);
        assert_eq!(
            out(7, lane),
            0x1111_1111 << (lane % 4),
            "match.any, lane {lane}"
        );
        let guarded = if lane < 16 { lane ^ 8 } else { 0 };
        assert_eq!(out(8, lane), guarded, "guarded shuffle, lane {lane}");
    }
}

/// Lanes waiting for lanes that never come, and a lane outside its own member mask, are errors
/// naming the instruction.
#[test]
fn impossible_warp_instructions_are_errors() {
    // Half the warp waits at a barrier, the other half at a shuffle of the whole warp.
    let body = "\tsetp.lt.u32 %p1, %r2, 16;\n\t@%p1 bra $B;\n\
        \tshfl.sync.idx.b32 %r3, %r2, 0, 31, -1;\n\tbra $E;\n$B:\n\tbar.sync 0;\n$E:\n";
    let e = warp_run(body, 32, 1).err().map(|e| e.to_string());
    let e = e.unwrap_or_default();
    assert!(
        e.contains("shfl.sync.idx.b32") && e.contains("never run it"),
        "{e}"
    );
    let e = warp_run(
        "\tsetp.eq.u32 %p1, %r2, 0;\n\tvote.sync.ballot.b32 %r3, %p1, 1;\n",
        32,
        1,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        e.contains("vote.sync.ballot.b32") && e.contains("outside its member mask"),
        "{e}"
    );
}

/// Lanes that run a loop a different number of times meet again at the warp instruction after
/// it, and the step counts are per lane.
#[test]
fn lanes_meet_after_loops_of_different_lengths() {
    let t = 32;
    let body = format!(
        "\tmov.u32 %r3, 0;\n$L:\n\tadd.u32 %r3, %r3, 1;\n\tsetp.le.u32 %p1, %r3, %r2;\n\
         \t@%p1 bra $L;\n\tactivemask.b32 %r4;\n\tredux.sync.add.u32 %r5, %r3, %r4;\n{}{}",
        store(0, t, "%r4"),
        store(1, t, "%r5"),
    );
    let got = warp_run(&body, t, 2).unwrap_or_else(|e| panic!("{e}"));
    for lane in 0..32 {
        assert_eq!(got[lane], u32::MAX);
        assert_eq!(got[32 + lane], (1..=32).sum::<u32>());
    }
}
