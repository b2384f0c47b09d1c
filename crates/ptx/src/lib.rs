//! The PTX model of mantissa: parse the PTX that NVRTC/nvcc write (ISA up to 9.x) into a typed
//! [`Module`], print it back so that ptxas accepts it, count its floating-point work per kernel
//! and source line ([`census`]), and link its instructions by def-use ([`graph`]).
//!
//! It is not a compiler or a PTX validator: it reads what NVIDIA's compilers emit and keeps
//! anything else as [`Verbatim`] text with a [`Diagnostic`] naming the line, so an unknown
//! construct never stops an analysis and never disappears from printed output. It compiles
//! nothing (NVRTC lives in `mantissa-gpu`) and prints nothing to the terminal.
//!
//! Where the main types are:
//! - [`parse()`] (in `parse.rs`) gives a [`Parsed`]: the [`Module`] and its [`Diagnostic`]s.
//! - The model (in `model.rs`): [`Module`] → [`Item`]s ([`Function`], [`VarDecl`], `.file`,
//!   verbatim `.section`s) → [`Statement`]s (register declarations, labels, `.loc` [`Loc`]s with
//!   `inlined_at`, [`Instruction`]s) → [`Operand`]s (registers, [`Imm`] with exact float bits,
//!   addresses, vectors, call lists). Every instruction has a stable [`InstId`].
//! - Printing is `Display` on the model (in `print.rs`): `parse(print(parse(x))) == parse(x)`.
//! - [`op`]: the one decode of what an instruction means ([`op::decode`] → [`op::Op`]: kind,
//!   value type, rounding, `.ftz`/`.approx`/`.full`/`.sat`, which operands it writes). Every
//!   other module reads it; a new opcode is taught there once, and no opcode's text is tested
//!   anywhere else (`tests/it/one_decode.rs` checks the workspace).
//! - [`regs`]: registers interned per function ([`regs::RegId`], [`regs::RegTable`]).
//! - [`decode`]: a function decoded once ([`decode::Decoded`]: ops, defs/uses as ids, `.loc`s).
//! - [`cfg`](mod@cfg): basic blocks, dominators and natural loops with nesting.
//! - [`graph`]: the def-use graph (reaching definitions over the CFG), indexed both ways.
//! - [`site`]: [`site::Site`], one rebuild-stable address per instruction, shared by
//!   configurations, reports and diff causes.
//! - [`census`]: f32/f64 operation counts (div rn/full/approx, sqrt, rcp, ftz, conversions
//!   float↔int with rounding and saturation), loads and stores by state space and width, per
//!   kernel, per source line and per loop, and arithmetic intensity.
//! - [`compare`]: one kernel across builds (flag sets), per source line, with what changes
//!   results highlighted (contraction, approximate div/sqrt, ftz, float→unsigned casts).
//! - [`ptxas`]: optional ptxas (assemble check, register use and spills from `-v`).
//! - [`sass`]: what runs — the PTX assembled with `ptxas -lineinfo`, disassembled with
//!   `nvdisasm -g -c`, SASS mnemonics counted per source line (FFMA confirms a contraction)
//!   and classified there ([`sass::float_op`]).
//! - [`tools`]: the one search for CUDA's command-line tools (ptxas, nvdisasm) and the pip
//!   wheels' site-packages, which `mantissa-gpu` uses too.
//! - [`promotion`]: accidental double precision — f64 regions entered from f32 and rounded
//!   back, per source line, with the literal or call responsible and the fix; f64 values that
//!   are carried (loops, memory, parameters) are told apart as intentional.
//! - [`fiset`]: FISets (seed 002's Fast Imprecise Sets, Algorithm 1) — groups of eligible f64
//!   instructions grown over the def-use graph whose arithmetic-to-conversion ratio (the
//!   conversions counted exactly as [`demote`] inserts them) exceeds 1, united where they
//!   overlap, filtered by the §4.4 loop heuristic; [`fiset::fisets`] gives them with a profile
//!   per function.
//! - [`variables`]: PTX-level variables for delta debugging — webs of f64 registers joined by
//!   `mov.f64`/`selp.f64`, each with the eligible instructions writing it.
//! - [`units`]: math-function units — the instructions of one `exp(x)` call, found from the
//!   `function_name` of `.loc`s in a build with `crates/gpu/cuda/mantissa_units.cuh`
//!   pre-included ([`units::units`] gives [`units::Unit`]s per function) — and, for PTX without
//!   those markers, opaque regions: source lines that reinterpret f64 bits.
//! - [`pass`]: rewrites, one file each, behind the [`pass::Pass`] trait and chained by
//!   [`pass::Pipeline`]. [`demote`] (`pass/demote.rs`) demotes a [`demote::DemoteSet`] of f64
//!   instructions (named by sites, or by the older selectors) to f32 with an f32 twin per
//!   register and conversions only where values enter or leave the set; [`demote::same_code`]
//!   checks a marked build against the unmarked one. [`pass::count`] counts executions per
//!   instruction into a global array, through a runtime function call or an inline atomic.
//!   [`pass::shadow`] measures per instruction the demotion error of f64 arithmetic and the
//!   exceptions (NaN, inf, subnormal, division by zero) of f32/f64 arithmetic on the GPU, with a
//!   CPU oracle ([`pass::shadow::oracle`]) built on the interpreter.
//! - [`interp`]: a PTX interpreter that runs kernels on the CPU (IEEE arithmetic in every
//!   rounding mode), so passes are tested by running the original and the rewritten kernel;
//!   [`interp::run_observed`] shows every arithmetic instruction's operands and result.
//! - [`symbols`]: module variables and their sizes, the `.version`/`.target` header, demangled
//!   names: read here for the GPU runtime and the harness alike.
//! - [`entry`]: kernel entry signatures for the launcher.
//! - [`rewrite`]: the toolkit passes use. A [`rewrite::Rewriter`] batches edits to one function
//!   (code before/after an instruction, keeping its guard and `.loc`; new registers, one range
//!   per type; kernel parameters) and applies them in one walk; [`rewrite::add_global`] adds a
//!   module global under a unique name.
//! - [`link`]: [`link::merge_runtime`] merges a device runtime (a CUDA header compiled to PTX
//!   with relocatable device code) into a module that the driver loads as one;
//!   [`link_modules::link_modules`] links an application's own modules into one (for a trace).
//!
//! Why a hand-written parser rather than the `ptx-syntax` crate (0.5.0, which round-trips NVRTC
//! 13 output): (1) build time — it takes about 2.5 minutes to build, longer than this whole
//! workspace's CPU crates; (2) control over failure — we need every statement we do not
//! understand kept verbatim with its line and the rest analysed, not a parse error for the
//! module; (3) rewriting — shadow-value instrumentation needs stable instruction ids, fresh
//! registers ([`Function::fresh_reg`]) and added parameters ([`Param::new`]) on a model whose
//! shape we own. NVRTC's PTX is regular (one statement a line, a few line-ended directives), so
//! the parser is a small statement splitter plus per-statement readers.
//!
//! Where new code goes: a new opcode or modifier is taught in [`op`] only; a new pass is one file
//! in `pass/` (see [`pass`]); a new read-only analysis (a census, a search for causes) is a module
//! here that takes a [`decode::Decoded`] (and the [`cfg`](mod@cfg) or [`graph`] when it needs them)
//! and returns plain data, naming instructions by [`site::Site`] when its result leaves the process
//! (files, reports). A trial strategy (how configurations are searched or run) is not here: the
//! harness builds, loads and times, hands this crate sets of sites and gets rewritten modules back.

#![deny(missing_docs)]

pub mod census;
pub mod cfg;
pub mod compare;
pub mod decode;
pub mod entry;
pub mod fiset;
pub mod graph;
pub mod interp;
pub mod lex;
pub mod link;
pub mod link_modules;
pub mod model;
pub mod op;
pub mod parse;
pub mod pass;
pub mod pointees;
mod print;
pub mod promotion;
pub mod ptxas;
pub mod regs;
pub mod rewrite;
pub mod sass;
pub mod site;
pub mod symbols;
pub mod tools;
pub mod units;
pub mod variables;

pub use model::*;
pub use parse::{parse, Diagnostic, Parsed};
/// The demotion pass, where it was before passes had a directory.
pub use pass::demote;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
