//! Which analyses a run makes (`--analysis demotion,shadow,exceptions`, all three by default):
//! they cost differently, so a user picks. `shadow` (higher-precision shadow values) is its own
//! instrumented run of the program.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// The analyses that exist, as the command line names them.
pub const ACCEPTED: &str = "demotion, shadow, exceptions";

/// The analyses of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Analyses {
    /// Demotion error (seed 002 Eq. 2) at every f64 arithmetic instruction.
    pub demotion: bool,
    /// Higher-precision shadow values: local and accumulated error per instruction,
    /// cancellations, digits right per output element.
    pub shadow: bool,
    /// NaN, ±inf, division by zero and subnormal results at every f32 and f64 instruction.
    pub exceptions: bool,
}

impl Default for Analyses {
    /// Every analysis that exists.
    fn default() -> Self {
        Analyses {
            demotion: true,
            shadow: true,
            exceptions: true,
        }
    }
}

/// A list naming no analysis that exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalysesError {
    /// A word that names no analysis.
    #[error("--analysis: found '{0}'; accepted: {ACCEPTED} (comma-separated)")]
    Unknown(String),
    /// Nothing at all.
    #[error("--analysis: found an empty list; accepted: {ACCEPTED} (comma-separated)")]
    Empty,
}

impl FromStr for Analyses {
    type Err = AnalysesError;

    /// `demotion`, `shadow`, `exceptions`, comma-separated, in any order, repeats allowed.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut a = Analyses {
            demotion: false,
            shadow: false,
            exceptions: false,
        };
        for word in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "demotion" => a.demotion = true,
                "exceptions" => a.exceptions = true,
                "shadow" => a.shadow = true,
                other => return Err(AnalysesError::Unknown(other.to_string())),
            }
        }
        if !a.demotion && !a.shadow && !a.exceptions {
            return Err(AnalysesError::Empty);
        }
        Ok(a)
    }
}

impl Analyses {
    /// The analyses of the demotion-and-exceptions build, named as the command line names them
    /// (the values analysis runs in a build of its own).
    pub fn without_values(&self) -> String {
        Analyses {
            shadow: false,
            ..*self
        }
        .to_string()
    }
}

impl fmt::Display for Analyses {
    /// `demotion,shadow,exceptions`, as the command line takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [
            (self.demotion, "demotion"),
            (self.shadow, "shadow"),
            (self.exceptions, "exceptions"),
        ]
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
        let all = Analyses::default();
        assert_eq!("demotion,shadow,exceptions".parse(), Ok(all));
        assert_eq!(" exceptions , shadow,demotion,demotion ".parse(), Ok(all));
        assert_eq!(
            "exceptions".parse(),
            Ok(Analyses {
                demotion: false,
                shadow: false,
                exceptions: true
            })
        );
        assert_eq!(
            "shadow".parse(),
            Ok(Analyses {
                demotion: false,
                shadow: true,
                exceptions: false
            })
        );
        assert_eq!(all.to_string(), "demotion,shadow,exceptions");
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
            "--analysis: found 'speed'; accepted: demotion, shadow, exceptions (comma-separated)"
        );
        assert_eq!(",".parse::<Analyses>(), Err(AnalysesError::Empty));
    }
}
