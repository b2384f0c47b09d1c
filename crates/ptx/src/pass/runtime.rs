//! Merging a device runtime into an instrumented module, as a pass: the runtime's PTX (a CUDA
//! header compiled for the module's target by the caller, who has the compiler) is merged
//! ([`crate::link::merge_runtime`]) and the runtime functions it names are inlined where the
//! module calls them ([`crate::pass::inline`]), so that an instrumented kernel pays no call ABI
//! per recorded instruction.
//!
//! A named function the module never calls is left as the runtime defines it (neither inlined
//! nor removed): an analysis that instruments for exceptions only never calls the demotion
//! function, and the module must stay the one it was.

use super::inline::{called_functions, inline, InlineReport};
use super::{Outcome, Pass, PassError, Report};
use crate::link::merge_runtime;
use crate::model::Module;

/// The pass: merge `ptx` (a runtime's PTX) and inline the functions of `inline` that are called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRuntime {
    /// The runtime's name in reports (`mantissa_shadow.cuh`).
    pub name: String,
    /// The runtime's PTX, compiled for the module's target (or an older one).
    pub ptx: String,
    /// Runtime functions to inline where the module calls them.
    pub inline: Vec<String>,
}

impl Pass for MergeRuntime {
    fn name(&self) -> String {
        "runtime".into()
    }

    fn run(&self, module: &Module) -> Result<Outcome, PassError> {
        let error = |message: String| PassError {
            pass: self.name(),
            message,
        };
        let merged = merge_runtime(module, &self.ptx)
            .map_err(|e| error(format!("merging {}: {e}", self.name)))?;
        let called = called_functions(&merged);
        let chosen: Vec<&str> = self
            .inline
            .iter()
            .map(String::as_str)
            .filter(|f| called.iter().any(|c| c == f))
            .collect();
        let (module, report) = match chosen.is_empty() {
            true => (merged, InlineReport::default()),
            false => {
                let out = inline(&merged, &chosen)
                    .map_err(|e| error(format!("inlining {}: {e}", self.name)))?;
                (out.module, out.report)
            }
        };
        let summary = format!(
            "merged {}; inlined {}",
            self.name,
            match report.inlined.is_empty() {
                true => "nothing".to_string(),
                false => report
                    .inlined
                    .iter()
                    .map(|(f, n)| format!("{f} ×{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        );
        Ok(Outcome {
            module,
            report: Report::new("runtime", summary, Vec::new(), report),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{decode, OpKind};
    use crate::parse;

    const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\n";

    /// A runtime of two functions: `twice` (called by the kernel below) and `half` (never called).
    const RUNTIME: &str = r#"
.visible .func  (.param .b64 func_retval0) twice(
	.param .b64 twice_param_0
)
{
	.reg .f64 	%fd<3>;
	ld.param.f64 	%fd1, [twice_param_0];
	add.rn.f64 	%fd2, %fd1, %fd1;
	st.param.f64 	[func_retval0], %fd2;
	ret;
}
.visible .func  (.param .b64 func_retval0) half(
	.param .b64 half_param_0
)
{
	.reg .f64 	%fd<3>;
	ld.param.f64 	%fd1, [half_param_0];
	mul.rn.f64 	%fd2, %fd1, 0d3FE0000000000000;
	st.param.f64 	[func_retval0], %fd2;
	ret;
}
"#;

    /// `*p = twice(*p)`, calling the runtime through an `.extern` prototype, as a pass writes it.
    const USER: &str = r#"
.extern .func  (.param .b64 func_retval0) twice(
	.param .b64 twice_param_0
);
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .f64 	%fd<3>;
	.reg .b64 	%rd<2>;
	ld.param.u64 	%rd1, [k_param_0];
	ld.global.f64 	%fd1, [%rd1];
	{
	.param .b64 param0;
	st.param.f64 	[param0], %fd1;
	.param .b64 retval0;
	call.uni (retval0), twice, (param0);
	ld.param.f64 	%fd2, [retval0];
	}
	st.global.f64 	[%rd1], %fd2;
	ret;
}
"#;

    fn calls(module: &Module) -> usize {
        module
            .functions()
            .flat_map(|f| f.instructions())
            .filter(|i| matches!(decode(i).kind, OpKind::Call))
            .count()
    }

    /// The called runtime function is merged and inlined (no call is left, and the function is
    /// gone); the uncalled one is merged and left as the runtime defines it; the report says so.
    #[test]
    fn called_runtime_functions_are_inlined_and_the_others_left_alone() {
        let user = parse(&format!("{HEADER}{USER}")).module;
        let pass = MergeRuntime {
            name: "test.cuh".into(),
            ptx: format!("{HEADER}{RUNTIME}"),
            inline: vec!["twice".into(), "half".into()],
        };
        let out = pass.run(&user).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(calls(&user), 1);
        assert_eq!(calls(&out.module), 0, "{}", out.module);
        let names: Vec<&str> = out.module.functions().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["half", "k"], "{}", out.module);
        assert_eq!(out.report.summary, "merged test.cuh; inlined twice ×1");
        // Nothing named to inline: merged, every call kept.
        let kept = MergeRuntime {
            inline: Vec::new(),
            ..pass
        };
        let out = kept.run(&user).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(calls(&out.module), 1);
        assert_eq!(out.report.summary, "merged test.cuh; inlined nothing");
    }
}
