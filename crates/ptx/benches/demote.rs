//! Times parse + demote(all) + print of a 5,423-instruction kernel (tests/fixtures/units/bench.cu,
//! a loop of f64 arithmetic unrolled 360 times, compiled by NVRTC 13.0 for sm_90 -lineinfo).
//! Run: `cargo bench -p mantissa-ptx --bench demote -- --quick`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use mantissa_ptx::demote::{demote, DemoteSet};

const KERNEL: &str = include_str!("../tests/fixtures/units/bench.nvrtc.ptx");

fn parse_demote_print(c: &mut Criterion) {
    c.bench_function("parse + demote(all) + print, 5423 instructions", |b| {
        b.iter(|| {
            let m = mantissa_ptx::parse(black_box(KERNEL)).module;
            match demote(&m, &DemoteSet::all()) {
                Ok(d) => d.module.to_string().len(),
                Err(_) => 0,
            }
        })
    });
}

/// The three stages apart, to see where the time goes.
fn stages(c: &mut Criterion) {
    let m = mantissa_ptx::parse(KERNEL).module;
    c.bench_function("parse only", |b| {
        b.iter(|| mantissa_ptx::parse(black_box(KERNEL)).module.items.len())
    });
    c.bench_function("demote(all) only", |b| {
        b.iter(|| demote(black_box(&m), &DemoteSet::all()).map(|d| d.report.demoted()))
    });
    if let Ok(d) = demote(&m, &DemoteSet::all()) {
        c.bench_function("print only", |b| {
            b.iter(|| black_box(&d.module).to_string().len())
        });
    }
}

criterion_group!(benches, parse_demote_print, stages);
criterion_main!(benches);
