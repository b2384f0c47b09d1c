//! The glossary at the end of `report.html`: docs/GLOSSARY.md, embedded at build time and turned
//! into HTML, so a report explains its terms wherever it is opened, with nothing fetched.
//!
//! The converter reads only what GLOSSARY.md uses: `#`/`##` headings, paragraphs, `- ` list
//! items with indented continuation lines, and inline `**strong**`, `*emphasis*`, `` `code` ``,
//! `\*` and `[text](target)` links. Links to other files of the repository become their text
//! (they do not resolve from a report's directory); links to `http(s)` addresses stay links.

use crate::html::escape;

/// docs/GLOSSARY.md as built into this binary.
pub(crate) const GLOSSARY_MD: &str = include_str!("../../../docs/GLOSSARY.md");

/// The id of the glossary's section in `report.html`.
pub(crate) const GLOSSARY_ID: &str = "glossary";

/// Inline Markdown to HTML (see the module docs for what is understood).
fn inline(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let text = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    let find = |from: usize, c: char| (from..chars.len()).find(|&k| chars[k] == c);
    let mut out = String::new();
    let (mut strong, mut em) = (false, false);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out += &escape(&chars[i + 1].to_string());
                i += 2;
            }
            '`' => match find(i + 1, '`') {
                Some(end) => {
                    out += &format!("<code>{}</code>", escape(&text(i + 1, end)));
                    i = end + 1;
                }
                None => {
                    out.push('`');
                    i += 1;
                }
            },
            '*' if chars.get(i + 1) == Some(&'*') => {
                out += if strong { "</strong>" } else { "<strong>" };
                strong = !strong;
                i += 2;
            }
            '*' => {
                out += if em { "</em>" } else { "<em>" };
                em = !em;
                i += 1;
            }
            '[' => {
                let link = find(i + 1, ']')
                    .filter(|&close| chars.get(close + 1) == Some(&'('))
                    .and_then(|close| Some((close, find(close + 2, ')')?)));
                match link {
                    Some((close, end)) => {
                        let label = inline(&text(i + 1, close));
                        let target = text(close + 2, end);
                        if target.starts_with("http://") || target.starts_with("https://") {
                            out += &format!("<a href=\"{}\">{label}</a>", escape(&target));
                        } else {
                            out += &label;
                        }
                        i = end + 1;
                    }
                    None => {
                        out.push('[');
                        i += 1;
                    }
                }
            }
            c => {
                out += &escape(&c.to_string());
                i += 1;
            }
        }
    }
    // An unbalanced marker in the source must not leave the rest of the page bold.
    if em {
        out += "</em>";
    }
    if strong {
        out += "</strong>";
    }
    out
}

/// What a run of source lines is being gathered into.
enum Block {
    None,
    Paragraph(String),
    List(Vec<String>),
}

fn flush(block: &mut Block, out: &mut String) {
    match std::mem::replace(block, Block::None) {
        Block::None => {}
        Block::Paragraph(p) => out.push_str(&format!("<p>{}</p>\n", inline(p.trim()))),
        Block::List(items) => {
            out.push_str("<ul>\n");
            for item in items {
                out.push_str(&format!("<li>{}</li>\n", inline(item.trim())));
            }
            out.push_str("</ul>\n");
        }
    }
}

/// The glossary section of `report.html`; its headings start at `<h3>` under the section's
/// `<h2>Glossary</h2>`.
pub(crate) fn glossary_html() -> String {
    let mut out = format!("<section id=\"{GLOSSARY_ID}\" class=\"glossary\">\n<h2>Glossary</h2>\n");
    let mut block = Block::None;
    for line in GLOSSARY_MD.lines() {
        if line.trim().is_empty() {
            flush(&mut block, &mut out);
        } else if let Some(title) = line.strip_prefix("## ") {
            flush(&mut block, &mut out);
            out.push_str(&format!("<h3>{}</h3>\n", inline(title)));
        } else if line.starts_with("# ") {
            // The page's own title: the section has one.
            flush(&mut block, &mut out);
        } else if let Some(item) = line.strip_prefix("- ") {
            if !matches!(block, Block::List(_)) {
                flush(&mut block, &mut out);
                block = Block::List(Vec::new());
            }
            if let Block::List(items) = &mut block {
                items.push(item.to_string());
            }
        } else {
            match &mut block {
                Block::List(items) if line.starts_with(' ') => {
                    if let Some(last) = items.last_mut() {
                        last.push(' ');
                        last.push_str(line.trim());
                    }
                }
                Block::Paragraph(p) => {
                    p.push(' ');
                    p.push_str(line.trim());
                }
                _ => {
                    flush(&mut block, &mut out);
                    block = Block::Paragraph(line.trim().to_string());
                }
            }
        }
    }
    flush(&mut block, &mut out);
    out.push_str("</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn inline_markdown_becomes_html() {
        assert_eq!(
            inline("**f32x2** — `hi + lo` <2> *thesis*, \\*"),
            "<strong>f32x2</strong> — <code>hi + lo</code> &lt;2&gt; <em>thesis</em>, *"
        );
        assert_eq!(inline("see [COMMANDS.md](COMMANDS.md)"), "see COMMANDS.md");
        assert_eq!(
            inline("[x](https://a.example/b)"),
            "<a href=\"https://a.example/b\">x</a>"
        );
        // Unbalanced markers are closed, stray brackets and backticks kept.
        assert_eq!(inline("**a"), "<strong>a</strong>");
        assert_eq!(inline("[a `b"), "[a `b");
    }

    #[test]
    fn the_glossary_renders_every_heading_and_term() {
        let html = glossary_html();
        let headings = GLOSSARY_MD.lines().filter(|l| l.starts_with("## ")).count();
        assert!(headings >= 6);
        assert_eq!(html.matches("<h3>").count(), headings);
        let items = GLOSSARY_MD.lines().filter(|l| l.starts_with("- ")).count();
        assert_eq!(html.matches("<li>").count(), items);
        // Every Markdown marker was consumed: none is left in the text outside code.
        let outside_code: String = html
            .split("<code>")
            .map(|part| part.split_once("</code>").map_or(part, |(_, rest)| rest))
            .collect();
        for marker in ["**", "`", "](", "- **"] {
            assert!(!outside_code.contains(marker), "{marker} left in the HTML");
        }
        assert_eq!(
            html.matches("<strong>").count(),
            html.matches("</strong>").count()
        );
        assert_eq!(html.matches("<em>").count(), html.matches("</em>").count());
    }

    /// A name as the glossary spells its family: `mp64` is one of `mp32 … mp1024`, `gmp-range3`
    /// one of `gmp-range1 … gmp-range5`.
    fn family(name: &str) -> String {
        let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
        if stem == "mp" {
            "mp32".into()
        } else if stem.ends_with("range") {
            format!("{stem}1")
        } else {
            name.to_string()
        }
    }

    #[test]
    fn every_name_in_the_committed_reports_is_explained() {
        let mut names = BTreeSet::new();
        for (_, text) in crate::tests::COMMITTED {
            for line in text.lines() {
                let r = crate::record::Record::from_json_line(line).unwrap();
                names.insert(family(&r.precision));
                names.insert(family(&r.input));
                names.insert(r.algorithm.clone());
                names.insert(r.workload.clone());
                if let Some(f) = r.flags {
                    names.insert(f);
                }
            }
        }
        for term in [
            "slug factor",
            "ulp",
            "digits",
            "contraction",
            "ftz",
            "seed 000",
            "oor",
        ] {
            names.insert(term.to_string());
        }
        for name in &names {
            assert!(
                GLOSSARY_MD.contains(&format!("**{name}**")),
                "{name} is not a term of docs/GLOSSARY.md"
            );
        }
    }
}
