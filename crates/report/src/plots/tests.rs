use super::*;
use crate::labels::CHAR_EM;
use crate::record::Backend;
use crate::tables::groups;
use crate::tables::tests::{fixture, rec, CPU1, CPU2, G1, G64};

/// Every number in SVG path data and coordinates parses and is finite.
pub fn assert_clean_svg(svg: &str) {
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(100)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(
        !svg.contains("NaN") && !svg.contains("inf\""),
        "non-finite number in SVG"
    );
    for cap in [
        "points=\"",
        "d=\"",
        " x=\"",
        " y=\"",
        " cx=\"",
        " cy=\"",
        " width=\"",
        " height=\"",
    ] {
        for piece in svg.split(cap).skip(1) {
            let value = piece.split('"').next().unwrap_or("");
            for num in value
                .split(|c: char| c == ' ' || c == ',' || c.is_ascii_alphabetic() && c != 'e')
                .filter(|s| !s.is_empty())
            {
                let x: f64 = num
                    .parse()
                    .unwrap_or_else(|_| panic!("{cap}{value}: {num}"));
                assert!(x.is_finite(), "{cap}{value}");
            }
        }
    }
}

fn plots_of(records: &[crate::record::Record]) -> Vec<Plot> {
    let naming = Naming::of(records);
    let gs = groups(records);
    all_plots(&gs, &naming)
        .unwrap()
        .into_iter()
        .flatten()
        .collect()
}

#[test]
fn fixture_plots_have_titles_axes_legends_and_clean_coordinates() {
    let plots = plots_of(&fixture());
    let names: Vec<&str> = plots.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "error-sum-serial-cpu1-cpu2",
            "error-sum-serial-gpu1x32",
            "error-sum-serial-gpu64x32",
            "time-sum-serial-n1048576",
            "tradeoff-sum-serial-range1-n1048576",
            "tradeoff-sum-serial-range5-n1048576"
        ]
    );
    for p in &plots {
        assert_clean_svg(&p.svg);
        // Text is SVG text for the browser to lay out, not glyph outlines from a font file.
        assert!(
            p.svg.contains("<text") && p.svg.contains("sans-serif"),
            "{}",
            p.name
        );
        assert!(p.svg.contains("log scale"), "{}", p.name);
    }
    // The error plots are heat maps: every precision and input class named, exact results
    // as "exact" cells, the overflowed f32 sum as an "inf" cell that says why on hover.
    let cpu = &plots[0];
    for label in [
        "input class",
        "precision",
        ">range1</text>",
        ">range5</text>",
        ">f32</text>",
        ">f64x2</text>",
        ">mp256</text>",
        ">exact result (error 0)</text>",
    ] {
        assert!(cpu.svg.contains(label), "{label} missing in {}", cpu.svg);
    }
    assert_eq!(
        cpu.svg.matches("class=\"cell exact\"").count(),
        2,
        "f64x2 on both inputs"
    );
    assert!(cpu
        .svg
        .contains("<title>f32 · range5: sum overflowed to inf</title>"));
    assert!(cpu.not_plotted.is_empty());
    assert!(!cpu.svg.contains("drawn at"));
    // f64x2 ran out of resources at 64 blocks on range5: a "not measured" cell.
    assert!(plots[2]
        .svg
        .contains("<title>f64x2 · range5: did not fit the device (out of resources)</title>"));
    // The other plots keep their legends; scatter plots draw an exact 0 below the errors.
    for p in &plots[3..] {
        assert!(p.svg.contains("legend"), "{}", p.name);
    }
    let time = &plots[3];
    for label in ["cpu×1", "gpu 64×32", "median time (ms, log scale)"] {
        assert!(time.svg.contains(label), "{label} missing");
    }
    // mp256 errors of 1e-30 push the zero floor below them.
    assert!(plots[4].svg.contains("exact 0, drawn at 1e-32"));
    assert!(
        plots[4].caption.contains("drawn at 1e-32"),
        "{}",
        plots[4].caption
    );
    assert!(plots[5].svg.contains("GPU launch"));
    assert_eq!(plots[5].not_plotted.len(), 2, "{:?}", plots[5].not_plotted);
}

#[test]
fn one_configuration_times_are_a_dot_per_precision_with_its_spread() {
    let mut v = Vec::new();
    for (p, samples) in [
        ("f32", [0.9, 1.0, 1.4]),
        ("f64", [1.0, 1.1, 1.2]),
        ("mp256", [40.0, 41.0, 45.0]),
    ] {
        let mut r = rec(p, "range1", CPU1, 1e-9, 1.0);
        r.time = crate::record::TimeStats::from_samples(&samples);
        v.push(r);
    }
    let plots = plots_of(&v);
    let time = plots
        .iter()
        .find(|p| p.name.starts_with("time"))
        .expect("a time plot");
    assert_clean_svg(&time.svg);
    // Precisions along the x axis, one dot each, and a legend of what the marks mean rather
    // than a legend of lines that are not drawn.
    assert_eq!(
        time.svg.matches("class=\"x-label\"").count(),
        3,
        "{}",
        time.svg
    );
    for p in [">f32</text>", ">f64</text>", ">mp256</text>", "precision"] {
        assert!(time.svg.contains(p), "{p}");
    }
    assert_eq!(
        time.svg.matches("<circle").count(),
        3 + 1,
        "three dots and the key"
    );
    // (plotters writes a text's content on a line of its own)
    assert!(time.svg.contains("\nmedian\n") && time.svg.contains("\nfastest … slowest\n"));
    assert!(
        !time.svg.contains("\nf32\n"),
        "no legend entry per precision"
    );
    assert!(time.title.ends_with("cpu×1"), "{}", time.title);
    // One whisker per dot, from the fastest to the slowest repetition: f32's spans 0.9…1.4.
    assert!(time.caption.contains("fastest and slowest"));
    let whiskers = time
        .svg
        .lines()
        .filter(|l| l.starts_with("<polyline") && l.contains("stroke-width=\"2\""))
        .count();
    assert_eq!(whiskers, 3 + 1, "three bars and the key");
    // With several configurations the plot keeps a line per precision.
    let mut w = v.clone();
    for r in &v {
        let mut g = r.clone();
        g.backend = CPU2;
        w.push(g);
    }
    let plots = plots_of(&w);
    let time = plots.iter().find(|p| p.name.starts_with("time")).unwrap();
    assert!(time.svg.contains(">cpu×2</text>"));
    assert!(time.caption.contains("per backend configuration"));
}

/// A text's box on the page: (left, top, right, bottom), in pixels.
type TextBox = (f64, f64, f64, f64);

fn attr(tag: &str, name: &str) -> Option<f64> {
    tag.split(&format!(" {name}=\""))
        .nth(1)?
        .split('"')
        .next()?
        .parse()
        .ok()
}

/// The boxes of the category labels and of the x axis name of a categorical plot, measured
/// from the SVG: each character [`CHAR_EM`] of its font size wide, each line one font size
/// high; a label rotated by 270° stands on its anchor and extends downwards.
fn x_text_boxes(svg: &str) -> (Vec<(String, TextBox)>, Option<TextBox>) {
    let mut labels = Vec::new();
    let mut desc = None;
    for piece in svg.split("<text").skip(1) {
        let (tag, rest) = piece.split_once('>').unwrap();
        let text = rest.split("</text>").next().unwrap().trim();
        let (Some(x), Some(y), Some(f)) = (attr(tag, "x"), attr(tag, "y"), attr(tag, "font-size"))
        else {
            continue;
        };
        let w = text.chars().count() as f64 * CHAR_EM * f;
        if tag.contains("class=\"x-label\"") {
            let b = if tag.contains("rotate(270") {
                (x - f / 2.0, y, x + f / 2.0, y + w)
            } else {
                (x - w / 2.0, y, x + w / 2.0, y + f)
            };
            labels.push((text.to_string(), b));
        } else if tag.contains("dy=\"-0.5ex\"") && !tag.contains("rotate") {
            // The x axis name: centred, standing on its y.
            desc = Some((x - w / 2.0, y - f, x + w / 2.0, y));
        }
    }
    (labels, desc)
}

fn overlap(a: TextBox, b: TextBox) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// Fails when two category labels, or a label and the axis name, overlap, or a label leaves
/// the picture.
fn assert_labels_apart(name: &str, svg: &str) {
    let (labels, desc) = x_text_boxes(svg);
    let height = svg
        .split_once("height=\"")
        .and_then(|(_, r)| r.split('"').next()?.parse::<f64>().ok())
        .unwrap();
    for (i, (ta, a)) in labels.iter().enumerate() {
        assert!(
            a.0 >= 0.0 && a.3 <= height,
            "{name}: {ta} leaves the plot: {a:?}"
        );
        for (tb, b) in &labels[i + 1..] {
            assert!(!overlap(*a, *b), "{name}: {ta} {a:?} overlaps {tb} {b:?}");
        }
        if let Some(d) = desc {
            assert!(
                !overlap(*a, d),
                "{name}: {ta} {a:?} overlaps the axis name {d:?}"
            );
        }
    }
}

#[test]
fn category_labels_never_overlap() {
    // Every plot of every committed run: the category counts the suite produces (up to 46
    // input classes × sizes in a sum's error plot, and every launch in a time plot).
    let mut most = 0;
    for (name, text) in crate::tests::COMMITTED {
        let records: Vec<crate::record::Record> = text
            .lines()
            .map(|l| crate::record::Record::from_json_line(l).unwrap())
            .collect();
        for p in plots_of(&records) {
            if p.svg.contains("class=\"x-label\"") {
                most = most.max(x_text_boxes(&p.svg).0.len());
                assert_labels_apart(&format!("{name}/{}", p.name), &p.svg);
            }
        }
    }
    assert!(
        most >= 10,
        "the committed runs' largest plot has {most} categories"
    );
    // Far beyond: 150 launches on devices with long names are thinned, shortened and still
    // apart.
    let records: Vec<_> = (0..150u32)
        .map(|i| {
            let mut r = rec("f64", "range1", Backend::gpu(i + 1, 32), 1e-9, 1.0);
            r.device = format!("a-very-long-device-name-{i}");
            r
        })
        .collect();
    let plots = plots_of(&records);
    let time = plots.iter().find(|p| p.name.starts_with("time")).unwrap();
    assert_labels_apart("150 categories", &time.svg);
    let (labels, _) = x_text_boxes(&time.svg);
    assert!(labels.len() < 150 && labels.len() > 10, "{}", labels.len());
    assert!(labels.iter().any(|(t, _)| t.contains('…')));
    // A few short names stay horizontal at the largest font.
    let few = plots_of(&fixture());
    assert!(few[3]
        .svg
        .contains("font-size=\"11\" class=\"x-label\">cpu×1</text>"));
    assert_labels_apart("fixture", &few[3].svg);
}

#[test]
fn a_size_sweep_draws_one_line_per_precision() {
    let tiles = crate::record::Backend::GpuTiles { tile: 8 };
    let mut v = Vec::new();
    for (k, n) in [16u64, 256, 4096].into_iter().enumerate() {
        for (p, e) in [("f32", 1e-3), ("f64", 1e-12)] {
            let mut r = rec(p, "range1", tiles, e * (k + 1) as f64, 0.1 * (k + 1) as f64);
            r.size = n;
            v.push(r);
        }
    }
    // Two sizes only on the CPU: not a sweep.
    for n in [16u64, 256] {
        let mut r = rec("f64", "range1", CPU1, 1e-12, 5.0);
        r.size = n;
        v.push(r);
    }
    let plots = plots_of(&v);
    let sweeps: Vec<&Plot> = plots
        .iter()
        .filter(|p| p.name.starts_with("sweep"))
        .collect();
    assert_eq!(
        sweeps.len(),
        1,
        "{:?}",
        plots.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
    assert!(
        sweeps[0].title.contains("n = 16 … 2^12"),
        "{}",
        sweeps[0].title
    );
    assert!(
        sweeps[0].title.contains("gpu tiles 8×8"),
        "{}",
        sweeps[0].title
    );
    assert_clean_svg(&sweeps[0].svg);
    // A polyline per precision (drawn at 0.7 opacity, unlike the axes) joins its sizes.
    let lines: Vec<&str> = sweeps[0]
        .svg
        .lines()
        .filter(|l| l.starts_with("<polyline") && l.contains("opacity=\"0.7\""))
        .collect();
    assert_eq!(lines.len(), 2, "{}", sweeps[0].svg);
    assert!(
        lines.iter().all(|l| l.matches(',').count() == 3),
        "{lines:?}"
    );
}

#[test]
fn a_single_point_plots() {
    let plots = plots_of(&[rec("f64", "range1", CPU1, 3e-10, 2.0)]);
    assert_eq!(plots.len(), 3);
    assert!(plots[0].svg.contains(">3.0e-10</text>"));
    for p in &plots {
        assert_clean_svg(&p.svg);
        assert!(p.not_plotted.is_empty());
    }
}

#[test]
fn all_zero_errors_plot_at_the_floor() {
    let records: Vec<_> = ["f64x2", "mp256", "exact"]
        .iter()
        .map(|p| rec(p, "range1", G1, 0.0, 1.0))
        .collect();
    let plots = plots_of(&records);
    assert_eq!(plots[0].svg.matches("class=\"cell exact\"").count(), 3);
    let tradeoff = plots
        .iter()
        .find(|p| p.name.starts_with("tradeoff"))
        .unwrap();
    assert!(tradeoff.svg.contains("exact 0, drawn at 1e-25"));
    for p in &plots {
        assert_clean_svg(&p.svg);
    }
}

#[test]
fn huge_and_tiny_values_plot_without_panicking() {
    let records = vec![
        rec("f32", "range1", G1, 1e300, 1e-300),
        rec("f64", "range1", G1, 1e-300, 1e300),
        rec("f64x2", "range1", G1, 0.0, f64::MAX),
        rec("mp256", "range1", G1, 5e-324, f64::MIN_POSITIVE),
        rec("exact", "range1", G64, f64::MAX, 5e-324),
    ];
    let plots = plots_of(&records);
    for p in &plots {
        assert_clean_svg(&p.svg);
    }
    // Zero goes below the smallest real error, not above it.
    let tradeoff = plots
        .iter()
        .find(|p| p.name.starts_with("tradeoff"))
        .unwrap();
    assert!(!tradeoff.svg.contains("drawn at 1e-25"));
    assert!(tradeoff.caption.contains("drawn at"));
    // The heat map's scale spans every decade, 1e-324 to 1e309.
    assert!(plots[0].svg.contains(">1e-324</text>"), "{}", plots[0].svg);
}

#[test]
fn non_finite_errors_are_cells_in_the_heat_map_and_listed_under_scatter_plots() {
    let mut nan = rec("f32", "range2", G1, f64::NAN, 1.0);
    nan.value = Some(f64::NAN);
    let mut inf_err = rec("f64", "range2", G1, f64::INFINITY, 1.0);
    inf_err.value = Some(1.0);
    let plots = plots_of(&[nan, inf_err]);
    assert!(plots[0]
        .svg
        .contains("<title>f32 · range2: sum result is nan</title>"));
    assert!(plots[0]
        .svg
        .contains("<title>f64 · range2: error is inf</title>"));
    assert_eq!(plots[0].svg.matches("class=\"cell nonfinite\"").count(), 2);
    let tradeoff = plots
        .iter()
        .find(|p| p.name.starts_with("tradeoff"))
        .unwrap();
    assert_eq!(
        tradeoff.not_plotted,
        [
            "f32 range2 gpu 1×32: sum result is nan",
            "f64 range2 gpu 1×32: error is inf"
        ]
    );
    for p in &plots {
        assert_clean_svg(&p.svg);
    }
}

#[test]
fn nothing_that_ran_means_no_plot() {
    let mut r = rec("f64x2", "range1", G64, 0.0, 1.0);
    r.status = crate::record::Status::OutOfResources;
    r.error = None;
    r.time = None;
    assert!(plots_of(&[r]).is_empty());
}

#[test]
fn log_axis_spans_whole_decades_with_room_below() {
    assert_eq!(LogAxis::of([1e-3, 5e2]), LogAxis { lo: -4.0, hi: 3.0 });
    assert_eq!(LogAxis::of([1.0]), LogAxis { lo: -2.0, hi: 2.0 });
    assert_eq!(LogAxis::of([f64::NAN, 0.0]), LogAxis { lo: -1.0, hi: 1.0 });
    assert_eq!(LogAxis::label(&-25.0), "1e-25");
    assert_eq!(zero_floor(Some(1e-3)), 1e-25);
    assert_eq!(zero_floor(Some(1.5e-34)), 1e-36);
    assert_eq!(
        slug("error sum/serial gpu 64×32"),
        "error-sum-serial-gpu-64-32"
    );
}
