//! Demotion by sites, old configuration files, and the output fingerprints of the code before
//! the pass directory.

use super::tests::{all_fixtures, module, MARKED_NVRTC};
use crate::demote::*;
use crate::op::{decode_name, OpKind, Space};
use crate::site::Site;
use std::collections::HashMap;

/// FNV-1a (64 bits) of a text: a printed module's fingerprint.
fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The printed output of demote(all) and of every third eligible selector, for every fixture,
/// is byte for byte what the code before passes and the decode printed (commit bde10c0; the
/// fingerprints are in tests/fixtures/units/demote_golden.txt).
#[test]
fn output_is_what_the_code_before_the_pass_directory_printed() {
    let golden: HashMap<&str, (&str, &str)> =
        include_str!("../../../tests/fixtures/units/demote_golden.txt")
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                Some((w.next()?, (w.next()?, w.next()?)))
            })
            .collect();
    let fixtures = all_fixtures();
    assert_eq!(golden.len(), fixtures.len());
    for (name, text) in fixtures {
        let m = module(text);
        let all = demote(&m, &DemoteSet::all())
            .map(|d| d.module.to_string())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let sels: Vec<Selector> = candidates(&m)
            .into_iter()
            .filter_map(|c| c.selector)
            .enumerate()
            .filter(|(k, _)| k % 3 == 1)
            .map(|(_, s)| s)
            .collect();
        let sub = demote(&m, &DemoteSet::selectors(sels))
            .map(|d| d.module.to_string())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = (format!("{:016x}", fnv(&all)), format!("{:016x}", fnv(&sub)));
        let want = golden.get(name).copied().unwrap_or_default();
        assert_eq!((got.0.as_str(), got.1.as_str()), want, "{name}");
    }
}

/// The same instructions named by sites and by selectors demote to the same module, for every
/// fixture; sites name ineligible instructions too, which are refused with the reason.
#[test]
fn sites_select_what_selectors_select() {
    for (name, text) in all_fixtures() {
        let m = module(text);
        let cands = candidates(&m);
        let (sels, sites): (Vec<Selector>, Vec<Site>) = cands
            .iter()
            .filter_map(|c| Some((c.selector.clone()?, c.site.clone())))
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(_, p)| p)
            .unzip();
        let by_sel = demote(&m, &DemoteSet::selectors(sels.clone()))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let by_site =
            demote(&m, &DemoteSet::sites(sites.clone())).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(by_sel.module, by_site.module, "{name}");
        assert!(by_site.report.refused.is_empty() && by_site.report.unmatched_sites.is_empty());
        assert_eq!(
            selector_sites(&m, &sels),
            sites.iter().cloned().map(Some).collect::<Vec<_>>(),
            "{name}"
        );
    }
    // An ineligible instruction (a load) and a stale site.
    let m = module(MARKED_NVRTC);
    let cands = candidates(&m);
    let load = cands
        .iter()
        .find(|c| decode_name(&c.opcode).kind == OpKind::Load(Space::Global))
        .map(|c| c.site.clone())
        .unwrap_or_else(|| panic!("no load"));
    let mut stale = load.clone();
    stale.line = 999;
    let d = demote(&m, &DemoteSet::sites([load.clone(), stale.clone()]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.report.demoted(), 0);
    assert_eq!(d.report.unmatched_sites, [stale]);
    assert_eq!(
        d.report.refused,
        [Refused {
            requested: load.to_string(),
            reason: "a load".into()
        }]
    );
    assert!(d
        .report
        .notes
        .iter()
        .any(|n| n.contains("1 sites name no instruction")));
}

/// Configuration files written by the code before sites (tests/fixtures/configs) still load:
/// their selectors convert to sites naming exactly the instructions that code demoted.
#[test]
fn configurations_written_before_sites_still_select_the_same_instructions() {
    let cases = [
        (
            MARKED_NVRTC,
            include_str!("../../../tests/fixtures/configs/units.selectors.json"),
            include_str!("../../../tests/fixtures/configs/units.selectors.ids.json"),
        ),
        (
            crate::tests::FIXTURES
                .iter()
                .find(|(n, _)| *n == "calls.default")
                .map_or("", |(_, t)| t),
            include_str!("../../../tests/fixtures/configs/calls.selectors.json"),
            include_str!("../../../tests/fixtures/configs/calls.selectors.ids.json"),
        ),
    ];
    for (ptx, config, ids) in cases {
        let m = module(ptx);
        let v: serde_json::Value = serde_json::from_str(config).unwrap_or_default();
        let requests: Vec<Request> =
            serde_json::from_value(v["instructions"].clone()).unwrap_or_default();
        assert!(requests.iter().all(|r| matches!(r, Request::Selector(_))));
        let want: Vec<u32> = serde_json::from_str(ids).unwrap_or_default();
        assert!(!want.is_empty());
        let sels: Vec<Selector> = requests
            .iter()
            .filter_map(|r| match r {
                Request::Selector(s) => Some(s.clone()),
                Request::Site(_) => None,
            })
            .collect();
        let sites: Vec<Site> = selector_sites(&m, &sels).into_iter().flatten().collect();
        assert_eq!(sites.len(), sels.len());
        let chosen: Vec<u32> = {
            let idx = crate::site::sites(&m);
            let mut v: Vec<u32> = sites
                .iter()
                .filter_map(|s| idx.inst(s).map(|i| i.0))
                .collect();
            v.sort_unstable();
            v
        };
        assert_eq!(chosen, want);
        // And the file itself, through the requests, demotes the same module as the sites.
        let by_file = demote(&m, &DemoteSet::requests(requests)).map(|d| d.module);
        let by_sites = demote(&m, &DemoteSet::sites(sites)).map(|d| d.module);
        assert_eq!(by_file.ok(), by_sites.ok());
    }
}
