//! Which analyses a run makes (`--analysis demotion,exceptions`): they cost differently, so a
//! user picks. Higher-precision shadow values (`shadow`) are named here so that asking for them
//! says plainly that they do not exist yet, rather than that the word is unknown.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// The analyses that exist, as the command line names them.
pub const ACCEPTED: &str = "demotion, exceptions";

/// The analyses of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Analyses {
    /// Demotion error (seed 002 Eq. 2) at every f64 arithmetic instruction.
    pub demotion: bool,
    /// NaN, ±inf, division by zero and subnormal results at every f32 and f64 instruction.
    pub exceptions: bool,
}

impl Default for Analyses {
    /// Every analysis that exists.
    fn default() -> Self {
        Analyses {
            demotion: true,
            exceptions: true,
        }
    }
}

/// A list naming no analysis that exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalysesError {
    /// Higher-precision shadow values were asked for.
    #[error("--analysis shadow: higher-precision shadow values are not built yet; accepted now: {ACCEPTED}")]
    NotYet,
    /// A word that names no analysis.
    #[error("--analysis: found '{0}'; accepted: {ACCEPTED} (comma-separated)")]
    Unknown(String),
    /// Nothing at all.
    #[error("--analysis: found an empty list; accepted: {ACCEPTED} (comma-separated)")]
    Empty,
}

impl FromStr for Analyses {
    type Err = AnalysesError;

    /// `demotion`, `exceptions` or both, comma-separated, in any order, repeats allowed.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut a = Analyses {
            demotion: false,
            exceptions: false,
        };
        for word in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "demotion" => a.demotion = true,
                "exceptions" => a.exceptions = true,
                "shadow" => return Err(AnalysesError::NotYet),
                other => return Err(AnalysesError::Unknown(other.to_string())),
            }
        }
        if !a.demotion && !a.exceptions {
            return Err(AnalysesError::Empty);
        }
        Ok(a)
    }
}

impl fmt::Display for Analyses {
    /// `demotion,exceptions`, as the command line takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [(self.demotion, "demotion"), (self.exceptions, "exceptions")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        write!(f, "{}", names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_in_any_order_with_repeats() {
        let both = Analyses::default();
        assert_eq!("demotion,exceptions".parse(), Ok(both));
        assert_eq!(" exceptions , demotion,demotion ".parse(), Ok(both));
        assert_eq!(
            "exceptions".parse(),
            Ok(Analyses {
                demotion: false,
                exceptions: true
            })
        );
        assert_eq!(both.to_string(), "demotion,exceptions");
        assert_eq!(
            "demotion".parse::<Analyses>().map(|a| a.to_string()),
            Ok("demotion".into())
        );
    }

    #[test]
    fn bad_lists_name_the_word_and_what_is_accepted() {
        let e = "demotion,speed".parse::<Analyses>().unwrap_err();
        assert_eq!(e, AnalysesError::Unknown("speed".into()));
        assert_eq!(
            e.to_string(),
            "--analysis: found 'speed'; accepted: demotion, exceptions (comma-separated)"
        );
        let e = "shadow,demotion".parse::<Analyses>().unwrap_err();
        assert_eq!(e, AnalysesError::NotYet);
        assert!(e.to_string().contains("not built yet"), "{e}");
        assert_eq!(",".parse::<Analyses>(), Err(AnalysesError::Empty));
    }
}
