//! A fresh study into an output directory that holds an earlier one moves the earlier output
//! aside whole, so that none of its files (plots of points the new run does not measure, above
//! all) sits beside the new ones as if it were theirs.

use std::path::{Path, PathBuf};

use crate::csv::CSV_FILE;
use crate::html::{HTML_FILE, PLOTS_DIR};
use crate::record::{Record, RecordError, RESULTS_FILE};
use crate::store::io_err;

/// What a study writes into its output directory: these move aside together. Anything else
/// there (the user's own files, earlier `previous-*` directories) stays.
const STUDY_OUTPUT: [&str; 5] = [RESULTS_FILE, "store.json", HTML_FILE, CSV_FILE, PLOTS_DIR];

/// Moves an earlier study's output in `dir` (its records, manifest, report, CSV and plots) into
/// `dir/previous-<UTC time>/` (numbered if that exists) and returns that directory, or `None`
/// when `dir` holds no earlier output (an empty `results.jsonl` alone, of a run that measured
/// nothing, is simply started again).
pub fn move_previous_output(dir: &Path) -> Result<Option<PathBuf>, RecordError> {
    let records = std::fs::metadata(dir.join(RESULTS_FILE)).is_ok_and(|m| m.len() > 0);
    let report = [HTML_FILE, CSV_FILE, PLOTS_DIR]
        .iter()
        .any(|name| std::fs::symlink_metadata(dir.join(name)).is_ok());
    if !records && !report {
        return Ok(None);
    }
    let stamp = Record::now().replace([':', '-'], "");
    let mut aside = dir.join(format!("previous-{stamp}"));
    let mut k = 1;
    while aside.exists() {
        aside = dir.join(format!("previous-{stamp}-{k}"));
        k += 1;
    }
    std::fs::create_dir(&aside).map_err(io_err(&aside))?;
    for name in STUDY_OUTPUT {
        let from = dir.join(name);
        if std::fs::symlink_metadata(&from).is_ok() {
            std::fs::rename(&from, aside.join(name)).map_err(io_err(&from))?;
        }
    }
    Ok(Some(aside))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_earlier_output_moves_aside_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(move_previous_output(d).unwrap(), None);
        std::fs::write(d.join(RESULTS_FILE), "").unwrap();
        assert_eq!(
            move_previous_output(d).unwrap(),
            None,
            "no records: nothing to keep"
        );
        std::fs::write(d.join(RESULTS_FILE), "{}\n").unwrap();
        std::fs::write(d.join(HTML_FILE), "<html>").unwrap();
        std::fs::create_dir(d.join(PLOTS_DIR)).unwrap();
        std::fs::write(d.join(PLOTS_DIR).join("sum.svg"), "<svg/>").unwrap();
        std::fs::write(d.join("notes.txt"), "mine").unwrap();
        let aside = move_previous_output(d).unwrap().unwrap();
        assert!(aside
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("previous-"));
        assert_eq!(
            std::fs::read_to_string(aside.join(RESULTS_FILE)).unwrap(),
            "{}\n"
        );
        assert_eq!(
            std::fs::read_to_string(aside.join(HTML_FILE)).unwrap(),
            "<html>"
        );
        assert_eq!(
            std::fs::read_to_string(aside.join(PLOTS_DIR).join("sum.svg")).unwrap(),
            "<svg/>"
        );
        assert!(!d.join(PLOTS_DIR).exists() && !d.join(HTML_FILE).exists());
        assert!(!d.join(RESULTS_FILE).exists());
        assert_eq!(
            std::fs::read_to_string(d.join("notes.txt")).unwrap(),
            "mine"
        );
        // A second run in the same second gets a directory of its own.
        std::fs::write(d.join(RESULTS_FILE), "{}\n").unwrap();
        let again = move_previous_output(d).unwrap().unwrap();
        assert_ne!(again, aside);
        assert!(aside.join(PLOTS_DIR).join("sum.svg").exists());
    }
}
