//! `report.html`: one self-contained file (inline CSS and SVG, no script, nothing fetched) with
//! the same tables as the Markdown output and the plots of [`crate::plots`], which are also
//! written one by one to `plots/*.svg`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::glossary::{glossary_html, GLOSSARY_ID};
use crate::plots::{all_plots, slug, Plot};
use crate::record::{write_atomically, Record, RecordError};
use crate::summary::{summary, Summary};
use crate::tables::{groups, Naming, Provenance, Table};
use crate::ReportError;

/// File name of the HTML report inside the output directory.
pub const HTML_FILE: &str = "report.html";
/// Folder of the separate SVG plots inside the output directory.
pub const PLOTS_DIR: &str = "plots";

/// Escapes text for HTML element content and double-quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em;
       color: #222; }
h1 { margin-bottom: 0.2em; }
.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5em 0 0.3em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; font-family: ui-monospace, monospace; }
td.num, td.label, span.nw { white-space: nowrap; }
td.status { color: #a33; }
/* A table wider than the page scrolls inside its box; shadows at the edges show that more is
   hidden there (the white covers scroll with the content, the shadows stay put). */
.scroll { overflow-x: auto;
  background-image: linear-gradient(to right, #fff 30%, rgba(255,255,255,0)),
    linear-gradient(to left, #fff 30%, rgba(255,255,255,0)),
    radial-gradient(farthest-side at 0 50%, rgba(0,0,0,0.45), rgba(0,0,0,0)),
    radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,0.45), rgba(0,0,0,0));
  background-position: left center, right center, left center, right center;
  background-repeat: no-repeat;
  background-size: 40px 100%, 40px 100%, 20px 100%, 20px 100%;
  background-attachment: local, local, scroll, scroll; }
p.scroll-hint { font-size: 0.8em; color: #666; text-align: right; margin: 0.2em 0 -0.3em; }
.note { font-size: 0.85em; color: #555; margin: 0.1em 0; }
figure { margin: 1.2em 0; }
figcaption { font-size: 0.9em; color: #444; }
ul.notplotted { font-size: 0.85em; color: #a33; margin-top: 0.2em; }
svg { max-width: 100%; height: auto; }
dl.measured { display: grid; grid-template-columns: max-content 1fr; gap: 0.15em 1em; margin: 0.4em 0; }
dl.measured dt { font-weight: 600; }
dl.measured dd { margin: 0; }
#findings td { min-width: 9em; }
nav.toc ol { columns: 2; font-size: 0.9em; }
nav.toc ul { margin: 0; }
section.glossary { font-size: 0.92em; border-top: 1px solid #ccc; margin-top: 2em; }
section.glossary li { margin: 0.25em 0; }
";

/// The ids of the summary's parts, which the table of contents links to.
const SUMMARY_ID: &str = "summary";
const MEASURED_ID: &str = "measured";
const FINDINGS_ID: &str = "findings";

/// The summary section: what was measured, then the findings table with its definitions.
fn render_summary(s: &Summary) -> String {
    let mut out = format!(
        "<section id=\"{SUMMARY_ID}\">\n<h2>Summary</h2>\n<h3 id=\"{MEASURED_ID}\">What was measured</h3>\n<dl class=\"measured\">\n"
    );
    for (label, text) in &s.measured {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(label), escape(text));
    }
    out.push_str("</dl>\n");
    let _ = writeln!(out, "<div id=\"{FINDINGS_ID}\">");
    out.push_str(&render_table(&s.findings));
    out.push_str("</div>\n</section>\n");
    out
}

/// The table of contents: the summary's parts and every workload section, by their ids.
fn render_toc(sections: &[(String, String)]) -> String {
    let mut out = format!(
        "<nav class=\"toc\" id=\"contents\">\n<h2>Contents</h2>\n<ol>\n<li><a href=\"#{SUMMARY_ID}\">Summary</a>\
         <ul><li><a href=\"#{MEASURED_ID}\">What was measured</a></li>\
         <li><a href=\"#{FINDINGS_ID}\">Cheapest precision per accuracy target</a></li></ul></li>\n"
    );
    for (id, title) in sections {
        let _ = writeln!(out, "<li><a href=\"#{id}\">{}</a></li>", escape(title));
    }
    let _ = writeln!(out, "<li><a href=\"#{GLOSSARY_ID}\">Glossary</a></li>");
    out.push_str("</ol>\n</nav>\n");
    out
}

/// Unique HTML ids for the workload sections, from their titles.
fn section_ids(titles: &[String]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::from([
        SUMMARY_ID.to_string(),
        MEASURED_ID.to_string(),
        FINDINGS_ID.to_string(),
        GLOSSARY_ID.to_string(),
        "contents".to_string(),
    ]);
    titles
        .iter()
        .map(|t| {
            let base = format!("w-{}", slug(t));
            let mut id = base.clone();
            let mut k = 2;
            while !seen.insert(id.clone()) {
                id = format!("{base}-{k}");
                k += 1;
            }
            id
        })
        .collect()
}

/// The page's content width (the body's `max-width`), in pixels.
const PAGE_PX: f64 = 1100.0;
/// A table cell's character advance (0.9em of 16 px, monospace 0.6 em) and its padding and
/// border, in pixels: enough to tell a table that fits from one that does not.
const CHAR_PX: f64 = 8.64;
const CELL_PAD_PX: f64 = 19.0;

/// Whether column `c` of `t` holds words that may wrap at their spaces: the columns of a table
/// made of words only (the findings, the PTX counts). Numbers and the row labels of number
/// tables (`general-range1`, `gpu 64×32`) stay on one line.
fn wraps(t: &Table, c: usize) -> bool {
    c < t.text_columns && t.text_columns == t.headers.len()
}

/// The width `t` needs, in pixels, with its unbreakable parts on one line.
fn estimated_width(t: &Table) -> f64 {
    let longest_word = |s: &str| s.split(' ').map(|w| w.chars().count()).max().unwrap_or(0);
    (0..t.headers.len())
        .map(|c| {
            let cells = t.rows.iter().filter_map(|r| r.get(c));
            let chars = cells
                .map(|s| {
                    if wraps(t, c) {
                        longest_word(s)
                    } else {
                        s.chars().count()
                    }
                })
                .chain([longest_word(&t.headers[c])])
                .max()
                .unwrap_or(0);
            chars as f64 * CHAR_PX + CELL_PAD_PX
        })
        .sum()
}

/// A cell's text as HTML: escaped, with each word that holds a digit kept on one line, since a
/// browser may break `1.14e-10` after its hyphen or `(0.16…2.63)` inside.
fn cell_html(text: &str) -> String {
    let words: Vec<String> = text
        .split(' ')
        .map(|w| {
            if w.chars().any(|c| c.is_ascii_digit()) {
                format!("<span class=\"nw\">{}</span>", escape(w))
            } else {
                escape(w)
            }
        })
        .collect();
    words.join(" ")
}

fn render_table(t: &Table) -> String {
    let mut out = format!("<h3>{}</h3>\n", escape(&t.title));
    if estimated_width(t) > PAGE_PX {
        out.push_str("<p class=\"scroll-hint\">wider than the page: scroll sideways →</p>\n");
    }
    out.push_str("<div class=\"scroll\"><table>\n<tr>");
    for h in &t.headers {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (c, cell) in row.iter().enumerate() {
            let class = if wraps(t, c) {
                ""
            } else if c < t.text_columns {
                " class=\"label\""
            } else if matches!(cell.as_str(), "oor" | "failed" | "n/a") {
                " class=\"num status\""
            } else {
                " class=\"num\""
            };
            let _ = write!(out, "<td{class}>{}</td>", cell_html(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    for n in &t.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(n));
    }
    out
}

fn render_plot(p: &Plot) -> String {
    let mut out = format!(
        "<figure id=\"{}\" aria-label=\"{}\">\n",
        escape(&p.name),
        escape(&p.title)
    );
    out.push_str(&p.svg);
    let _ = write!(
        out,
        "\n<figcaption>{} (<a href=\"{PLOTS_DIR}/{}.svg\">SVG</a>)</figcaption>\n",
        escape(&p.caption),
        escape(&p.name)
    );
    if !p.not_plotted.is_empty() {
        out.push_str("<p class=\"note\">Not plotted:</p>\n<ul class=\"notplotted\">");
        for line in &p.not_plotted {
            let _ = write!(out, "<li>{}</li>", escape(line));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</figure>\n");
    out
}

/// The HTML document and the plots it inlines.
pub(crate) fn render(records: &[Record]) -> Result<(String, Vec<Plot>), ReportError> {
    let naming = Naming::of(records);
    let prov = Provenance::of(records);
    let gs = groups(records);
    let plots = all_plots(&gs, &naming)?;
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>mantissa report</title>\n<style>",
    );
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n<h1>mantissa report</h1>\n");
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} records · mantissa {} · {} · devices: {}</p>",
        records.len(),
        escape(&prov.versions.join(", ")),
        escape(&prov.dates()),
        escape(&prov.devices.join(", "))
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\">The precisions, input classes, measures and references used here \
         (comp32n, gmp-range3, ulp, \"seed 000 Table 11\" …) are explained in the \
         <a href=\"#{GLOSSARY_ID}\">glossary</a> at the end.</p>"
    );
    if records.is_empty() {
        out.push_str("<p>No records: nothing to report.</p>\n");
    } else {
        out.push_str(&render_summary(&summary(records)));
    }
    let titles: Vec<String> = gs.iter().map(|g| g.title()).collect();
    let ids = section_ids(&titles);
    let sections: Vec<(String, String)> = ids.iter().cloned().zip(titles).collect();
    out.push_str(&render_toc(&sections));
    for ((g, plots), id) in gs.iter().zip(&plots).zip(&ids) {
        let _ = writeln!(
            out,
            "<section id=\"{id}\">\n<h2>{}</h2>",
            escape(&g.title())
        );
        for a in &g.accuracy {
            out.push_str(&render_table(&a.table(&naming)));
        }
        for t in g
            .timing
            .iter()
            .map(|t| t.table(&naming))
            .chain(g.extra_tables(&naming))
        {
            out.push_str(&render_table(&t));
        }
        for p in plots {
            out.push_str(&render_plot(p));
        }
        out.push_str("</section>\n");
    }
    out.push_str(&glossary_html());
    out.push_str(
        "<p class=\"note\">Rebuilt from results.jsonl by <code>mantissa report</code>; \
         every point is also in results.csv.</p>\n</body>\n</html>\n",
    );
    Ok((out, plots.into_iter().flatten().collect()))
}

/// Writes `out_dir/report.html` and each plot as `out_dir/plots/<name>.svg`, every file
/// atomically. Returns the path of the HTML file. An empty record list is an error, since a
/// page of nothing would look like a broken run.
pub fn write_html(out_dir: &Path, records: &[Record]) -> Result<PathBuf, ReportError> {
    if records.is_empty() {
        return Err(ReportError::Empty {
            path: out_dir.join(crate::RESULTS_FILE),
        });
    }
    let (html, plots) = render(records)?;
    let dir = out_dir.join(PLOTS_DIR);
    mantissa_files::ensure_dir(&dir).map_err(RecordError::from)?;
    for p in &plots {
        write_atomically(&dir.join(format!("{}.svg", p.name)), p.svg.as_bytes())?;
    }
    let path = out_dir.join(HTML_FILE);
    write_atomically(&path, html.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::fixture;

    #[test]
    fn html_is_self_contained_with_tables_and_one_svg_per_plot() {
        let records = fixture();
        let (html, plots) = render(&records).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.trim_end().ends_with("</html>"));
        assert!(html.contains("<meta charset=\"utf-8\">"));
        // Self-contained: nothing to fetch, no script.
        for external in ["<script", "<link", "src=\"http", "@import", "url("] {
            assert!(!html.contains(external), "{external}");
        }
        assert!(html.contains(&format!(">{} records ·", records.len())));
        assert!(html.contains("mantissa 0.1.0"));
        assert!(html.contains("devices: Test CPU, Test GPU"));
        assert_eq!(html.matches("<svg").count(), plots.len());
        assert_eq!(html.matches("</svg>").count(), plots.len());
        assert_eq!(html.matches("<figure").count(), plots.len());
        assert!(!html.contains("NaN"));
        // The tables, with escaped titles and the out-of-resources cell.
        assert!(html.contains("<h2>sum / serial</h2>"));
        assert!(html.contains("<h3>Absolute error — cpu×1, cpu×2 (n = 2^20)</h3>"));
        assert!(html.contains("<h3>Time, median ms (n = 2^20)</h3>"));
        assert!(html.contains("<td class=\"num status\">oor</td>"));
        assert!(html.contains("<th>(f64x2−f32)/f32</th>"));
        assert!(html.contains("<title>f32 · range5: sum overflowed to inf</title>"));
        // Tags balance well enough for a browser and a parser.
        for tag in ["table", "tr", "section", "figure", "figcaption", "ul"] {
            assert_eq!(
                html.matches(&format!("<{tag}>")).count()
                    + html.matches(&format!("<{tag} ")).count(),
                html.matches(&format!("</{tag}>")).count(),
                "<{tag}>"
            );
        }
    }

    /// The values of `attr="..."` in `html`.
    fn attr_values<'h>(html: &'h str, attr: &str) -> Vec<&'h str> {
        html.split(&format!(" {attr}=\""))
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect()
    }

    #[test]
    fn the_page_opens_with_the_summary_then_contents_that_link_every_section() {
        let records = fixture();
        let (html, _) = render(&records).unwrap();
        let at = |needle: &str| {
            html.find(needle)
                .unwrap_or_else(|| panic!("{needle} missing"))
        };
        // Summary first, then the contents, then the first workload table.
        assert!(at("<h2>Summary</h2>") < at("<h2>Contents</h2>"));
        assert!(at("<h2>Contents</h2>") < at("<h2>sum / serial</h2>"));
        assert_eq!(at("<table>"), at("<div id=\"findings\">") + "<div id=\"findings\">\n<h3>Cheapest precision per accuracy target</h3>\n<div class=\"scroll\">".len());
        assert!(at("<dt>Workloads</dt>") < at("<table>"));
        assert!(
            html.contains("2^-53"),
            "the page says what exact to f64 means"
        );
        // Every link inside the page has its anchor, ids are unique, every section is linked.
        let ids = attr_values(&html, "id");
        let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
        let links: Vec<&str> = attr_values(&html, "href")
            .into_iter()
            .filter_map(|h| h.strip_prefix('#'))
            .collect();
        for l in &links {
            assert!(unique.contains(l), "#{l} has no anchor");
        }
        for section in html.split("<section id=\"").skip(1) {
            let id = section.split('"').next().unwrap();
            assert!(links.contains(&id), "section {id} not in the contents");
        }
        assert!(links.contains(&"w-sum-serial"), "{links:?}");
    }

    #[test]
    fn write_html_writes_the_page_and_every_plot_file() {
        let dir = tempfile::tempdir().unwrap();
        let records = fixture();
        let path = write_html(dir.path(), &records).unwrap();
        assert_eq!(path, dir.path().join("report.html"));
        let html = std::fs::read_to_string(&path).unwrap();
        let mut files: Vec<String> = std::fs::read_dir(dir.path().join("plots"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files.len(), html.matches("<svg").count());
        for f in &files {
            assert!(f.ends_with(".svg"), "{f}");
            assert!(html.contains(&format!("href=\"plots/{f}\"")), "{f}");
            let svg = std::fs::read_to_string(dir.path().join("plots").join(f)).unwrap();
            assert!(html.contains(&svg), "{f} differs from the inlined plot");
        }
        // Writing again replaces the files, leaving no temporaries.
        write_html(dir.path(), &records).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path().join("plots")).unwrap().count(),
            files.len()
        );
    }

    #[test]
    fn an_empty_record_list_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_html(dir.path(), &[]).unwrap_err().to_string();
        assert!(e.contains("no records yet"), "{e}");
        assert!(!dir.path().join("report.html").exists());
    }

    fn table(headers: &[&str], rows: &[&[&str]], text_columns: usize) -> Table {
        Table {
            title: "t".into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
            text_columns,
            notes: Vec::new(),
        }
    }

    #[test]
    fn numbers_never_wrap_inside_and_wide_tables_say_they_scroll() {
        // A number table: labels and numbers stay on one line (by their class, which the style
        // sheet keeps unwrapped).
        let t = table(&["input", "f32"], &[&["general-range1", "1.14e-10"]], 1);
        let html = render_table(&t);
        assert!(html.contains("<td class=\"label\"><span class=\"nw\">general-range1</span></td>"));
        assert!(html.contains("<td class=\"num\"><span class=\"nw\">1.14e-10</span></td>"));
        for rule in [
            "td.num, td.label, span.nw { white-space: nowrap; }",
            ".scroll { overflow-x: auto;",
        ] {
            assert!(STYLE.contains(rule), "{rule}");
        }
        // A table of words wraps at spaces only: every word holding a digit is kept whole.
        let t = table(
            &["workload", "error ≤ 1e-6"],
            &[&[
                "sum / serial",
                "f32 or f64 (tied in time) · 1.00× f64 (0.16…2.63)",
            ]],
            2,
        );
        let html = render_table(&t);
        assert!(html.contains(
            "<td><span class=\"nw\">f32</span> or <span class=\"nw\">f64</span> (tied in time) · \
             <span class=\"nw\">1.00×</span> <span class=\"nw\">f64</span> \
             <span class=\"nw\">(0.16…2.63)</span></td>"
        ), "{html}");
        assert!(html.contains("<td>sum / serial</td>"));
        assert!(!html.contains("scroll-hint"));
        // Fourteen precision columns of 8-character numbers are wider than the page: the hint
        // shows; the same table with three columns does not get it.
        let headers: Vec<String> = (0..14).map(|k| format!("p{k}")).collect();
        let mut h: Vec<&str> = vec!["input", "n"];
        h.extend(headers.iter().map(String::as_str));
        let row: Vec<&str> = ["gmp-range5", "2^20"]
            .into_iter()
            .chain(std::iter::repeat_n("1.14e-10", 14))
            .collect();
        let wide = table(&h, &[&row], 2);
        assert!(estimated_width(&wide) > PAGE_PX);
        assert!(render_table(&wide)
            .contains("<p class=\"scroll-hint\">wider than the page: scroll sideways →</p>"));
        let narrow = table(&h[..5], &[&row[..5]], 2);
        assert!(estimated_width(&narrow) < PAGE_PX);
        assert!(!render_table(&narrow).contains("scroll-hint"));
    }

    #[test]
    fn the_page_links_its_glossary() {
        let (html, _) = render(&fixture()).unwrap();
        assert!(html.contains("<section id=\"glossary\" class=\"glossary\">"));
        assert!(html.contains("<li><a href=\"#glossary\">Glossary</a></li>"));
        assert!(html.contains("explained in the <a href=\"#glossary\">glossary</a>"));
        // The glossary comes last, after every workload section.
        assert!(html.find("id=\"glossary\"") > html.rfind("<section id=\"w-"));
        assert!(html.contains("<strong>comp32n</strong>"));
    }

    #[test]
    fn user_text_is_escaped() {
        let mut r = fixture().remove(0);
        r.workload = "<b>sum & co</b>".into();
        r.device = "\"GPU\"".into();
        let (html, _) = render(&[r]).unwrap();
        assert!(html.contains("&lt;b&gt;sum &amp; co&lt;/b&gt;"));
        assert!(!html.contains("<b>sum"));
        assert!(html.contains("&quot;GPU&quot;"));
    }
}
