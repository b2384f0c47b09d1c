use super::*;
use mantissa_gpu::testing::require_nvrtc_or_skip;
use mantissa_gpu::{Arch, Target};

fn ptx(source: &Source, flags: FlagSet) -> Option<String> {
    let compiler = require_nvrtc_or_skip()?;
    let compiled = compiler
        .compile(source, flags, Target::Cubin(Arch::new(9, 0)))
        .unwrap_or_else(|e| panic!("{}: {e}", source.name));
    Some(compiled.ptx.clone())
}

#[test]
fn chain_kernels_compile_for_every_twin_precision() {
    let Some(ptx) = ptx(&chain_source(), FlagSet::DEFAULT) else {
        return;
    };
    let counts = kernel_counts(&ptx);
    for p in Precision::NATIVE {
        let k = format!("chain_{p}");
        let c = counts.get(&k).unwrap_or_else(|| panic!("{k} missing"));
        // Products only: no division, nothing approximate.
        assert!(
            c.ops.keys().all(|op| !op.starts_with("div.")),
            "{k}: {:?}",
            c.ops
        );
        assert_eq!(c.approximate, 0, "{k}");
    }
}

#[test]
fn each_division_mode_compiles_to_its_instruction() {
    for mode in DivMode::ALL {
        let Some(ptx) = ptx(&doundo_source(mode), mode.flags()) else {
            return;
        };
        let counts = kernel_counts(&ptx);
        for p in DOUNDO_GPU_PRECISIONS {
            let k = format!("doundo_{p}");
            let c = counts.get(&k).unwrap_or_else(|| panic!("{k} missing"));
            check_division(mode, &k, c).unwrap_or_else(|e| panic!("{e}"));
            assert!(division_extra(c)[&format!("ptx.{}", mode.instruction())] >= 1.0);
            assert_eq!(c.ftz, 0, "{k}: no flush to zero in any mode");
        }
    }
}

/// The check can fail: the div-full source compiled without --prec-div=false keeps IEEE
/// division, and the div-approx source under --prec-div=false still has div.approx only.
#[test]
fn the_check_catches_a_wrong_flag_set() {
    let Some(full) = ptx(&doundo_source(DivMode::Full), FlagSet::DEFAULT) else {
        return;
    };
    let counts = kernel_counts(&full);
    for p in DOUNDO_GPU_PRECISIONS {
        let k = format!("doundo_{p}");
        let e = check_division(DivMode::Full, &k, &counts[&k]).unwrap_err();
        assert!(e.contains("div.rn.f32"), "{e}");
    }
    if let Some(approx) = ptx(&doundo_source(DivMode::Approx), FlagSet::APPROX_DIV) {
        let counts = kernel_counts(&approx);
        assert!(check_division(DivMode::Approx, "doundo_f32", &counts["doundo_f32"]).is_ok());
    }
}
