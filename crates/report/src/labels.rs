//! Category labels under an x axis, laid out so that no two overlap (horizontal, rotated,
//! smaller, thinned, shortened in the middle), and written as SVG text for the browser to set.
//! The plots of [`crate::plots`] and the heat maps of [`crate::heatmap`] size their text by the
//! same estimate of a character's width.

use std::fmt::Write as _;

use crate::plots::FONT;

/// Average advance of a sans-serif character, in em: the estimate by which labels are laid
/// out (and by which the tests measure them).
pub(crate) const CHAR_EM: f64 = 0.6;
/// Extra width allowed per label beyond [`CHAR_EM`], for fonts wider than the average.
const WIDTH_MARGIN: f64 = 1.15;
/// Space between two labels, in pixels.
const LABEL_GAP: f64 = 3.0;
/// Height of a line of text, in em, across a rotated label.
const LINE_EM: f64 = 1.2;
/// Font sizes tried for category labels, largest first (pixels, as written in the SVG).
const LABEL_FONTS: [f64; 3] = [11.0, 10.0, 8.0];
/// The longest a rotated label may be, in pixels; longer names are shortened in the middle.
const MAX_ROTATED_PX: f64 = 170.0;

/// How the category labels of an x axis are drawn so that no two overlap: horizontally when
/// the longest fits between its neighbours, else rotated to read upwards, at a smaller font and
/// then only every `every`-th one when even the rotated lines would touch; rotated names longer
/// than [`MAX_ROTATED_PX`] are shortened in the middle.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct XLabels {
    font: f64,
    rotated: bool,
    every: usize,
    texts: Vec<String>,
    /// Height the labels need below the axis, in pixels.
    pub height: f64,
}

/// Shortens `s` to at most `max` characters by replacing its middle with `…`, keeping both
/// ends (where category names differ: `general-range1 n=2^16`).
pub(crate) fn shorten(s: &str, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max || max < 3 {
        return s.to_string();
    }
    let head = (max - 1).div_ceil(2);
    let tail = max - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// The label layout for `categories` whose centres are `spacing` pixels apart.
pub(crate) fn x_labels(categories: &[String], spacing: f64) -> XLabels {
    let width = |text: &str, font: f64| text.chars().count() as f64 * CHAR_EM * font * WIDTH_MARGIN;
    let widest = |font: f64| {
        categories
            .iter()
            .map(|c| width(c, font))
            .fold(0.0, f64::max)
    };
    for font in LABEL_FONTS {
        if widest(font) + LABEL_GAP <= spacing {
            return XLabels {
                font,
                rotated: false,
                every: 1,
                texts: categories.to_vec(),
                height: LINE_EM * font,
            };
        }
    }
    let font = LABEL_FONTS
        .iter()
        .copied()
        .find(|f| LINE_EM * f + LABEL_GAP <= spacing)
        .unwrap_or(LABEL_FONTS[LABEL_FONTS.len() - 1]);
    let every = ((LINE_EM * font + LABEL_GAP) / spacing.max(1e-9))
        .ceil()
        .max(1.0) as usize;
    let max_chars = (MAX_ROTATED_PX / (CHAR_EM * font * WIDTH_MARGIN)).floor() as usize;
    let texts: Vec<String> = categories.iter().map(|c| shorten(c, max_chars)).collect();
    // The room below the axis is for the average advance: the margin keeps neighbours apart,
    // and a rotated label's length has no neighbour.
    let height = texts
        .iter()
        .map(|t| width(t, font) / WIDTH_MARGIN)
        .fold(0.0, f64::max);
    XLabels {
        font,
        rotated: true,
        every,
        texts,
        height,
    }
}

impl XLabels {
    /// The SVG text of the labels at the category centres `xs`, hanging from `y` (the axis).
    pub fn svg(&self, xs: &[f64], y: f64) -> String {
        let mut out = String::new();
        for (i, (text, x)) in self.texts.iter().zip(xs).enumerate() {
            if i % self.every != 0 {
                continue;
            }
            let text = crate::html::escape(text);
            let f = self.font;
            if self.rotated {
                // Anchored at its end on the axis and turned a quarter anticlockwise: the name
                // reads upwards and hangs below its category.
                let _ = writeln!(
                    out,
                    "<text x=\"{x:.1}\" y=\"{y:.1}\" dy=\"0.35em\" text-anchor=\"end\" \
                     font-family=\"{FONT}\" font-size=\"{f}\" class=\"x-label\" \
                     transform=\"rotate(270, {x:.1}, {y:.1})\">{text}</text>"
                );
            } else {
                let _ = writeln!(
                    out,
                    "<text x=\"{x:.1}\" y=\"{y:.1}\" dy=\"0.76em\" text-anchor=\"middle\" \
                     font-family=\"{FONT}\" font-size=\"{f}\" class=\"x-label\">{text}</text>"
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_shortened_in_the_middle() {
        assert_eq!(shorten("general-range1 n=2^16", 9), "gene…2^16");
        assert_eq!(shorten("range1", 9), "range1");
        let l = x_labels(&vec!["abc".to_string(); 3], 100.0);
        assert!(!l.rotated && l.every == 1 && l.font == 11.0);
        let l = x_labels(&vec!["a long category name".to_string(); 60], 10.0);
        assert!(l.rotated && l.font == 8.0 && l.every == 2, "{l:?}");
    }
}
