//! Slurm's time and memory values: `--time` as Slurm reads it (`MM`, `MM:SS`, `HH:MM:SS`,
//! `D-HH`, `D-HH:MM`, `D-HH:MM:SS`), written back as `D-HH:MM:SS`; `--mem` as a whole number
//! with an optional unit (K, M, G, T; M when none), held and written in MiB (Slurm's M).

use crate::Usage;

/// Parses a time limit into seconds; zero and Slurm's `UNLIMITED` are refused (a job array
/// should end).
pub fn parse_time(text: &str) -> Result<u64, Usage> {
    let t = text.trim();
    let bad = || {
        Usage::new(format!(
            "--time {text:?}: expected a positive time as Slurm writes it, D-HH:MM:SS (or MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM)"
        ))
    };
    let number = |s: &str| -> Result<u64, Usage> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse().map_err(|_| bad())
    };
    let (days, rest) = match t.split_once('-') {
        Some((d, rest)) => (Some(number(d)?), rest),
        None => (None, t),
    };
    let fields = rest
        .split(':')
        .map(number)
        .collect::<Result<Vec<u64>, _>>()?;
    // Below the leading field each one counts up to 60 (hours to 24 after a day count).
    let sixty = |v: u64| if v < 60 { Ok(v) } else { Err(bad()) };
    let seconds = match (days, fields.as_slice()) {
        (None, [m]) => m.checked_mul(60),
        (None, [m, s]) => m
            .checked_mul(60)
            .and_then(|m| m.checked_add(sixty(*s).ok()?)),
        (None, [h, m, s]) => h
            .checked_mul(3600)
            .and_then(|h| h.checked_add(sixty(*m).ok()? * 60 + sixty(*s).ok()?)),
        (Some(d), [h, rest @ ..]) if rest.len() <= 2 && *h < 24 => {
            let m = rest.first().map_or(Ok(0), |&m| sixty(m))?;
            let s = rest.get(1).map_or(Ok(0), |&s| sixty(s))?;
            d.checked_mul(86_400)
                .and_then(|d| d.checked_add(h * 3600 + m * 60 + s))
        }
        _ => None,
    };
    match seconds {
        Some(s) if s > 0 => Ok(s),
        _ => Err(bad()),
    }
}

/// `D-HH:MM:SS`.
pub fn format_time(seconds: u64) -> String {
    let (d, rest) = (seconds / 86_400, seconds % 86_400);
    format!(
        "{d}-{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Parses a memory size into MiB (`512M`, `4G`, `1T`, `2048`, `1048576K`, rounded up to whole
/// MiB); `0`, Slurm's "all of the node's memory", is kept.
pub fn parse_mem(text: &str) -> Result<u64, Usage> {
    let t = text.trim();
    let bad = || {
        Usage::new(format!(
            "--mem {text:?}: expected a whole number with an optional unit K, M, G or T (M when none), like 4G or 1500M"
        ))
    };
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let mib = match unit.to_ascii_uppercase().as_str() {
        "K" | "KB" => Some(n.div_ceil(1024)),
        "" | "M" | "MB" => Some(n),
        "G" | "GB" => n.checked_mul(1024),
        "T" | "TB" => n.checked_mul(1 << 20),
        _ => None,
    };
    mib.ok_or_else(bad)
}

/// `--mem`'s value for `mib` MiB: `4G` when whole GiB, else `1500M`.
pub fn format_mem(mib: u64) -> String {
    if mib >= 1024 && mib % 1024 == 0 {
        format!("{}G", mib / 1024)
    } else {
        format!("{mib}M")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_every_slurm_form_read_and_print() {
        assert_eq!(parse_time("90").unwrap(), 90 * 60);
        assert_eq!(parse_time("5:30").unwrap(), 330);
        assert_eq!(parse_time("01:02:03").unwrap(), 3723);
        assert_eq!(parse_time("2-3").unwrap(), 2 * 86_400 + 3 * 3600);
        assert_eq!(parse_time("1-00:30").unwrap(), 86_400 + 1800);
        assert_eq!(parse_time("0-12:00:01").unwrap(), 12 * 3600 + 1);
        // Hours beyond a day are fine without a day count.
        assert_eq!(parse_time("36:00:00").unwrap(), 36 * 3600);
        assert_eq!(format_time(3723), "0-01:02:03");
        assert_eq!(format_time(2 * 86_400 + 59), "2-00:00:59");
        for t in ["1-02:03:04", "0-00:11:00", "3-23:59:59"] {
            assert_eq!(format_time(parse_time(t).unwrap()), t);
        }
    }

    #[test]
    fn bad_times_are_one_line_naming_the_value() {
        for bad in [
            "",
            "0",
            "0-00:00:00",
            "x",
            "1h",
            "1:60",
            "1:2:3:4",
            "1-24:00",
            "-5",
            "1-",
            "1:-1",
            "UNLIMITED",
            "1.5",
            "99999999999999999999",
        ] {
            let e = parse_time(bad).unwrap_err().to_string();
            assert!(e.starts_with("--time") && !e.contains('\n'), "{bad}: {e}");
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn memory_sizes_read_in_mib_and_print() {
        assert_eq!(parse_mem("512").unwrap(), 512);
        assert_eq!(parse_mem("512M").unwrap(), 512);
        assert_eq!(parse_mem("4G").unwrap(), 4096);
        assert_eq!(parse_mem("4g").unwrap(), 4096);
        assert_eq!(parse_mem("1T").unwrap(), 1 << 20);
        assert_eq!(parse_mem("1025K").unwrap(), 2);
        assert_eq!(parse_mem("0").unwrap(), 0);
        assert_eq!(format_mem(4096), "4G");
        assert_eq!(format_mem(1500), "1500M");
        assert_eq!(format_mem(0), "0M");
        for bad in ["", "G", "4X", "-1", "1.5G", "4 G", "99999999999999999999T"] {
            let e = parse_mem(bad).unwrap_err().to_string();
            assert!(e.starts_with("--mem") && !e.contains('\n'), "{bad}: {e}");
        }
    }
}
