//! Every named program pipeline of mantissa, in one place: what each analysis runs, as a
//! [`Recipe`] (see [`crate::recipe`]) or, for the precision configurations, the passes their
//! rewrites chain. Read down this file to see every way a program is changed before it runs.
//!
//! | pipeline | base | passes | runtime | read back |
//! |---|---|---|---|---|
//! | [`demotion`] | the marked build (math calls as units) | demote | – | – |
//! | [`storage`] | after [`demotion`], when buffers stay in f32 | store-f32 | – | – |
//! | [`switched`] | the marked build, all demoted | switch | – | the mask is written |
//! | [`shadow`] (demotion error, exceptions) | pinned | shadow | `mantissa_shadow.cuh` | the statistics global |
//! | [`shadow_values`] | any recipe ([`pinned`], a diff build) | its passes, then shadow-values | `mantissa_shadow_values.cuh` | the statistics global |
//! | [`causes`] | as built | ftz, approximate, contraction, float→int (each a cause's sites) | – | – |
//! | [`promotion`] | any recipe | its passes, then promote | – | – |
//! | [`most_accurate`] | as built | the IEEE causes switched, then promote | – | – |
//! | [`other_build`] | another flag set's build | – | – | – |
//!
//! `base` is where the recipe starts ([`Base`]); the trial runner makes each base once.

use crate::recipe::{Base, Recipe};
use mantissa_gpu::runtime::{SHADOW, SHADOW_VALUES};
use mantissa_gpu::FlagSet;
use mantissa_ptx::pass::cause::{self, Candidate, SwitchError};
use mantissa_ptx::pass::demote::{Demote, DemoteSet};
use mantissa_ptx::pass::promote::{Promote, PromoteSet};
use mantissa_ptx::pass::shadow::{Shadow, ShadowOptions, DEMOTION_FUNCTION, SHADOW_GLOBAL};
use mantissa_ptx::pass::shadow_values::{self, ShadowValues};
use mantissa_ptx::pass::store_f32::{StoreF32, StoreRequest};
use mantissa_ptx::pass::switch::SwitchPass;
use mantissa_ptx::pass::Pipeline;

/// A precision configuration's rewrite of its base (the marked build): the f64 instructions of
/// `set` in f32 (`DemoteReport`).
pub fn demotion(set: DemoteSet) -> Pipeline {
    Pipeline::new().then(Demote::new(set))
}

/// Storage precision, after [`demotion`]: the kernel parameters of `requests` read and write
/// their buffers in f32 (`StoreReport`: what it refused is in the report, not an error).
pub fn storage(requests: Vec<StoreRequest>) -> Pipeline {
    Pipeline::new().then(StoreF32 { requests })
}

/// Every site of `set` able to run in either precision, chosen per trial by a mask in a module
/// global ([`crate::trial::switched`]; `SwitchReport`).
pub fn switched(set: DemoteSet) -> Pipeline {
    Pipeline::new().then(SwitchPass { set })
}

/// The demotion error and the exceptions per site (`options` says which, and over which sites),
/// on the pinned program, with the shadow runtime; its statistics global is read back and
/// decoded with the pass's report (`ShadowReport`).
pub fn shadow(options: ShadowOptions) -> Recipe {
    Recipe::new("shadow", Base::Pinned)
        .then(Shadow::new(options))
        .with_runtime(&SHADOW, &[DEMOTION_FUNCTION])
        .reading(SHADOW_GLOBAL)
}

/// Higher-precision shadow values of the program `of` makes (the pinned program, or a build
/// whose own digits are asked for), with the shadow-values runtime inlined; its statistics
/// global is read back and decoded with the pass's report (`ValuesReport`). The table of
/// shadow buffers is written by the caller, who allocates them ([`crate::Variant::writing`]).
pub fn shadow_values(of: Recipe) -> Recipe {
    let inline = shadow_values::inlined_functions();
    let inline: Vec<&str> = inline.iter().map(String::as_str).collect();
    let name = format!("shadow values of {}", of.name);
    let mut recipe = of
        .then(ShadowValues)
        .with_runtime(&SHADOW_VALUES, &inline)
        .reading(shadow_values::VALUES_GLOBAL);
    recipe.name = name;
    recipe
}

/// The program as built with ptxas's contractions pinned, as it is: the base of the shadow
/// analyses.
pub fn pinned() -> Recipe {
    Recipe::new("the pinned program", Base::Pinned)
}

/// The program as built, as it is.
pub fn as_built() -> Recipe {
    Recipe::new("the program as built", Base::AsBuilt)
}

/// The program as built with the causes `chosen` (indices into `list`, the candidates of that
/// program) switched off: each cause's pass over its own sites.
pub fn causes(list: &[Candidate], chosen: &[usize]) -> Result<Recipe, SwitchError> {
    Ok(Recipe::new("causes", Base::AsBuilt).with_pipeline(cause::pipeline(list, chosen)?))
}

/// The program `of` makes, then the f32 instructions of `set` computed in f64.
pub fn promotion(of: Recipe, set: PromoteSet) -> Recipe {
    let name = format!("{} promoted", of.name);
    let mut recipe = of.then(Promote::new(set));
    recipe.name = name;
    recipe
}

/// Seed 003's most-accurate build (`mantissa diff --builds`): the program as built with the
/// causes `ieee` switched off (indices into `list`: its approximate divisions, reciprocals,
/// square roots and flushes to zero), then every eligible f32 instruction computed in f64.
pub fn most_accurate(list: &[Candidate], ieee: &[usize]) -> Result<Recipe, SwitchError> {
    let mut recipe = promotion(causes(list, ieee)?, PromoteSet::all());
    recipe.name = "the most-accurate build".into();
    Ok(recipe)
}

/// The program built under `flags`, as written.
pub fn other_build(flags: FlagSet) -> Recipe {
    Recipe::new(&format!("the {} build", flags.name()), Base::Built(flags))
}
