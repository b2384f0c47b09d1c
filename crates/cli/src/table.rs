//! Plain-text tables: Markdown pipe tables whose columns line up in a terminal too.

/// A Markdown table with right-aligned numeric columns after the first `text_columns`.
pub fn markdown(headers: &[&str], rows: &[Vec<String>], text_columns: usize) -> String {
    let widths: Vec<usize> = (0..headers.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([headers[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let cell = |c: usize, s: &str| {
        let pad = widths[c] - s.chars().count();
        if c < text_columns {
            format!("{s}{}", " ".repeat(pad))
        } else {
            format!("{}{s}", " ".repeat(pad))
        }
    };
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(
        headers
            .iter()
            .enumerate()
            .map(|(c, h)| cell(c, h))
            .collect(),
    );
    out += &line(
        (0..headers.len())
            .map(|c| {
                if c < text_columns {
                    "-".repeat(widths[c])
                } else {
                    format!("{}:", "-".repeat(widths[c].saturating_sub(1)))
                }
            })
            .collect(),
    );
    for r in rows {
        out += &line(r.iter().enumerate().map(|(c, s)| cell(c, s)).collect());
    }
    out
}

/// A number in 4 significant digits: fixed for moderate magnitudes, scientific otherwise.
pub fn num(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if !x.is_finite() {
        format!("{x}")
    } else if (1e-2..1e5).contains(&x.abs()) {
        let decimals = (3 - x.abs().log10().floor() as i32).max(0) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.3e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_digits() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(0.5), "0.5000");
        assert_eq!(num(12.34567), "12.35");
        assert_eq!(num(1234.6), "1235");
        assert_eq!(num(3.2e-17), "3.200e-17");
        assert_eq!(num(2.5e8), "2.500e8");
        assert_eq!(num(f64::INFINITY), "inf");
    }

    #[test]
    fn columns_line_up() {
        let t = markdown(
            &["a", "value"],
            &[
                vec!["xx".into(), "1".into()],
                vec!["y".into(), "22.5".into()],
            ],
            1,
        );
        assert_eq!(
            t,
            "| a  | value |\n| -- | ----: |\n| xx |     1 |\n| y  |  22.5 |\n"
        );
    }
}
