//! The search for the causes that explain a difference: given candidates 0..n and a test that
//! switches a set of them and says how many output elements still differ from the reference,
//! find a minimal set whose switching leaves as few differing elements as switching all of them
//! does (none, when the candidates explain everything).
//!
//! **Which algorithm.** Zeller's ddmin proper tests subsets and complements at doubling
//! granularity; for k causes among L candidates it needs far more than 2·k·log2(L) tests in
//! its worst cases (it may test every complement at granularity n before splitting further).
//! This module uses *adaptive binary splitting* instead (group testing, as FLiT's bisection
//! does for files): `find(G, base)` knows that switching `base ∪ G` passes; if switching
//! `base` alone passes, G holds nothing needed; otherwise it halves G, finds what the first
//! half needs with the second switched, then what the second half needs with only that switched.
//! A half known to hold a cause (the other held none) is not tested. Each cause costs at most
//! two tests per halving, so k causes among L candidates cost at most about 2·k·log2(L) tests
//! (tested below on simulated programs). Results are memoised per set, so a set is never tested
//! twice.
//!
//! It assumes monotonicity (switching more never brings back a difference a subset removed).
//! The result is verified by its own test; when verification fails (causes that interact
//! non-monotonically) the search falls back to removing candidates one at a time from the whole
//! set, which gives a 1-minimal set (no single member can be dropped) at one test per candidate.
//!
//! The search is generic over the test and knows nothing of GPUs: `mantissa diff` passes a
//! test that runs one trial; the unit tests pass simulated programs.

use std::collections::HashMap;

/// What one test says about a set of switched candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetVerdict {
    /// Output elements that still differ from the reference.
    pub differing: u64,
}

/// How the search went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The minimal set (sorted candidate indices).
    pub minimal: Vec<usize>,
    /// Elements still differing with the minimal set switched.
    pub remaining: u64,
    /// Tests run (distinct sets; the baseline is not one).
    pub tests: usize,
    /// The binary splitting's result failed its verification and the one-at-a-time reduction
    /// made the set instead.
    pub fell_back: bool,
}

/// A test with its results remembered per set.
struct Memo<'t, E> {
    test: &'t mut dyn FnMut(&[usize]) -> Result<SetVerdict, E>,
    seen: HashMap<Vec<usize>, u64>,
}

impl<E> Memo<'_, E> {
    fn differing(&mut self, set: &[usize]) -> Result<u64, E> {
        let mut key = set.to_vec();
        key.sort_unstable();
        if let Some(&d) = self.seen.get(&key) {
            return Ok(d);
        }
        let d = (self.test)(&key)?.differing;
        self.seen.insert(key, d);
        Ok(d)
    }
}

/// Finds a minimal set among candidates `0..n` (see the module docs). `baseline` is the number
/// of differing elements with nothing switched (known, so not tested).
pub fn search<E>(
    n: usize,
    baseline: u64,
    mut test: impl FnMut(&[usize]) -> Result<SetVerdict, E>,
) -> Result<Found, E> {
    let mut memo = Memo {
        test: &mut test,
        seen: HashMap::new(),
    };
    memo.seen.insert(Vec::new(), baseline);
    let all: Vec<usize> = (0..n).collect();
    if n == 0 || baseline == 0 {
        return Ok(Found {
            minimal: Vec::new(),
            remaining: baseline,
            tests: 0,
            fell_back: false,
        });
    }
    // First assume the candidates explain everything; only if that fails is the whole set
    // tested for the best it can do.
    let mut target = 0;
    loop {
        let minimal = find(&mut memo, &all, &[], true, target)?;
        let remaining = memo.differing(&minimal)?;
        if remaining <= target {
            return Ok(Found {
                minimal,
                remaining,
                tests: memo.seen.len() - 1,
                fell_back: false,
            });
        }
        let best = memo.differing(&all)?;
        if best >= baseline {
            // Switching everything helps nothing: no subset is blamed.
            return Ok(Found {
                minimal: Vec::new(),
                remaining: baseline,
                tests: memo.seen.len() - 1,
                fell_back: false,
            });
        }
        if target == best {
            break;
        }
        target = best;
    }
    // Not monotone: drop members one at a time from the whole set while it still passes.
    let mut current = all;
    let mut k = 0;
    while k < current.len() {
        let mut without = current.clone();
        without.remove(k);
        if memo.differing(&without)? <= target {
            current = without;
        } else {
            k += 1;
        }
    }
    let remaining = memo.differing(&current)?;
    Ok(Found {
        minimal: current,
        remaining,
        tests: memo.seen.len() - 1,
        fell_back: true,
    })
}

/// What `group` must contribute, given that switching `base ∪ group` passes; `known` when
/// switching `base` alone is known to fail.
fn find<E>(
    memo: &mut Memo<'_, E>,
    group: &[usize],
    base: &[usize],
    known: bool,
    target: u64,
) -> Result<Vec<usize>, E> {
    if !known && memo.differing(base)? <= target {
        return Ok(Vec::new());
    }
    if group.len() <= 1 {
        return Ok(group.to_vec());
    }
    let (first, second) = group.split_at(group.len() / 2);
    let with_second: Vec<usize> = base.iter().chain(second).copied().collect();
    let from_first = find(memo, first, &with_second, false, target)?;
    let with_found: Vec<usize> = base.iter().chain(&from_first).copied().collect();
    let from_second = find(memo, second, &with_found, from_first.is_empty(), target)?;
    let mut out = from_first;
    out.extend(from_second);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::seq::index::sample;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use std::convert::Infallible;

    /// A simulated program: each seeded cause makes its own elements differ (a weight of at
    /// least 1) until switched; `unexplained` elements differ whatever is switched.
    struct Program {
        weights: HashMap<usize, u64>,
        unexplained: u64,
    }

    impl Program {
        fn differing(&self, set: &[usize]) -> u64 {
            let explained: u64 = self
                .weights
                .iter()
                .filter(|(c, _)| !set.contains(c))
                .map(|(_, w)| w)
                .sum();
            explained + self.unexplained
        }
    }

    fn seeded(rng: &mut Xoshiro256PlusPlus, k: usize, l: usize, unexplained: u64) -> Program {
        Program {
            weights: sample(rng, l, k)
                .into_iter()
                .map(|c| (c, rng.random_range(1..1000)))
                .collect(),
            unexplained,
        }
    }

    fn run(p: &Program, l: usize) -> Found {
        let mut calls = 0;
        let found = search(l, p.differing(&[]), |set| {
            calls += 1;
            Ok::<_, Infallible>(SetVerdict {
                differing: p.differing(set),
            })
        });
        let Ok(found) = found;
        assert_eq!(found.tests, calls, "every test is counted once");
        found
    }

    fn sorted(p: &Program) -> Vec<usize> {
        let mut v: Vec<usize> = p.weights.keys().copied().collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn every_seeded_cause_is_found_within_two_k_log2_l_tests() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(22);
        let mut worst_single_of_64 = 0;
        for k in 1..=4 {
            for l in [8, 16, 32, 64, 128, 256] {
                let bound = 2 * k * (l as f64).log2() as usize;
                for _ in 0..200 {
                    let p = seeded(&mut rng, k, l, 0);
                    let found = run(&p, l);
                    assert_eq!(found.minimal, sorted(&p), "k={k} L={l}");
                    assert_eq!(found.remaining, 0);
                    assert!(!found.fell_back);
                    assert!(
                        found.tests <= bound,
                        "k={k} L={l}: {} tests > {bound}",
                        found.tests
                    );
                    if k == 1 && l == 64 {
                        worst_single_of_64 = worst_single_of_64.max(found.tests);
                    }
                }
            }
        }
        assert!(worst_single_of_64 <= 15, "{worst_single_of_64}");
    }

    #[test]
    fn what_no_candidate_explains_is_left_and_the_causes_still_found() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for k in 1..=3 {
            let p = seeded(&mut rng, k, 32, 17);
            let found = run(&p, 32);
            assert_eq!(found.minimal, sorted(&p));
            assert_eq!(found.remaining, 17);
        }
        // Nothing explains anything: nothing is blamed.
        let p = Program {
            weights: HashMap::new(),
            unexplained: 5,
        };
        let found = run(&p, 16);
        assert_eq!(found.minimal, Vec::<usize>::new());
        assert_eq!(found.remaining, 5);
    }

    #[test]
    fn no_candidates_or_no_difference_cost_no_test() {
        let never = |_: &[usize]| -> Result<SetVerdict, ()> { Err(()) };
        assert_eq!(search(0, 10, never).map(|f| f.tests), Ok(0));
        assert_eq!(search(10, 0, never).map(|f| f.tests), Ok(0));
    }

    #[test]
    fn interacting_causes_fall_back_to_a_one_minimal_set() {
        // Candidates 2 and 5 cancel each other: either alone makes things worse, both together
        // remove the difference, which candidate 7 also needs.
        let differing = |set: &[usize]| -> u64 {
            let (a, b, c) = (set.contains(&2), set.contains(&5), set.contains(&7));
            let pair = match (a, b) {
                (true, true) => 0,
                (false, false) => 10,
                _ => 50,
            };
            pair + if c { 0 } else { 3 }
        };
        let found = search(8, differing(&[]), |s| {
            Ok::<_, Infallible>(SetVerdict {
                differing: differing(s),
            })
        });
        let Ok(found) = found;
        assert_eq!(found.remaining, 0);
        assert_eq!(found.minimal, vec![2, 5, 7]);
    }

    #[test]
    fn a_failing_test_stops_the_search_with_its_error() {
        let mut n = 0;
        let r = search(16, 4, |_| {
            n += 1;
            if n == 3 {
                Err("device lost")
            } else {
                Ok(SetVerdict { differing: 4 })
            }
        });
        assert_eq!(r, Err("device lost"));
    }
}
