//! The configurations the searches chose, saved where the user can run them: each as a
//! configuration file (`mantissa run SPEC --demote FILE`, [`mantissa_harness::config`]) and as a
//! listing per source line of what became f32, with the line's text.

use crate::gpu::configuration;
use crate::unit::{Config, TuneUnit};
use mantissa_harness::Configuration;
use mantissa_ptx::demote::candidates;
use mantissa_ptx::site::Site;
use mantissa_ptx::Module;
use mantissa_shadow::source::read_lines;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// `mode-2-3-digits-10pct`: a file name for a search's label.
pub fn slug(label: &str) -> String {
    let mut s = String::new();
    for c in label.chars() {
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' => s.push(c.to_ascii_lowercase()),
            '%' => s.push_str("pct"),
            _ if !s.ends_with('-') => s.push('-'),
            _ => {}
        }
    }
    s.trim_matches('-').to_string()
}

/// The listing of `config`: per source line, the instructions demoted (opcodes), the units they
/// belong to, and the line's text where the file can be read.
pub fn listing(units: &[TuneUnit], config: &Config, module: &Module, spec_dir: &Path) -> String {
    let opcode: HashMap<Site, String> = candidates(module)
        .into_iter()
        .map(|c| (c.site, c.opcode))
        .collect();
    let mut lines: BTreeMap<(String, u32), (Vec<String>, Vec<String>)> = BTreeMap::new();
    for &u in config {
        for s in &units[u].sites {
            let e = lines.entry((s.file.clone(), s.line)).or_default();
            e.0.push(opcode.get(s).cloned().unwrap_or_else(|| "?".into()));
            if !e.1.contains(&units[u].name) {
                e.1.push(units[u].name.clone());
            }
        }
        for b in &units[u].buffers {
            lines
                .entry((format!("buffer {b}"), 0))
                .or_default()
                .1
                .push("stored as f32".into());
        }
    }
    let mut files: HashMap<String, Option<Vec<String>>> = HashMap::new();
    let mut out = String::new();
    for ((file, line), (ops, names)) in &lines {
        let text = files
            .entry(file.clone())
            .or_insert_with(|| read_lines(file, spec_dir))
            .as_ref()
            .and_then(|t| t.get((*line as usize).wrapping_sub(1)))
            .map(|t| t.trim().to_string())
            .unwrap_or_default();
        let short = file.rsplit(['/', '\\']).next().unwrap_or(file);
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for o in ops {
            *count.entry(o.as_str()).or_default() += 1;
        }
        let ops: Vec<String> = count
            .iter()
            .map(|(o, n)| {
                if *n > 1 {
                    format!("{n}× {o}")
                } else {
                    o.to_string()
                }
            })
            .collect();
        out.push_str(&format!(
            "{short}:{line}  {text}\n    f32: {}  [{}]\n",
            ops.join(", "),
            names.join("; ")
        ));
    }
    out
}

/// Writes `config` as `dir/NAME.json` (a configuration file) and `dir/NAME.txt` (its listing);
/// returns the configuration file's path.
pub fn save(
    dir: &Path,
    name: &str,
    units: &[TuneUnit],
    config: &Config,
    module: &Module,
    spec_dir: &Path,
) -> std::io::Result<PathBuf> {
    mantissa_files::ensure_dir(dir)?;
    let Configuration::Demote(d) = configuration(units, config, name) else {
        unreachable!("configuration() always demotes")
    };
    let json = serde_json::to_string_pretty(&d).map_err(std::io::Error::other)?;
    let path = dir.join(format!("{name}.json"));
    mantissa_report::write_atomically(&path, json.as_bytes()).map_err(std::io::Error::other)?;
    let text = listing(units, config, module, spec_dir);
    mantissa_report::write_atomically(&dir.join(format!("{name}.txt")), text.as_bytes())
        .map_err(std::io::Error::other)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_become_file_names() {
        assert_eq!(slug("mode 2, 3 digits, 10%"), "mode-2-3-digits-10pct");
        assert_eq!(
            slug("delta debugging, the spec's tolerance"),
            "delta-debugging-the-spec-s-tolerance"
        );
    }
}
