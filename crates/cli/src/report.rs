//! `mantissa report`: wiring for [`mantissa_report`] — rebuild the tables, `report.html`,
//! `results.csv` and `plots/` of a study's output directory from its `results.jsonl` alone.

use std::path::PathBuf;

use clap::Args;
use mantissa_report::{load, markdown, write_csv, write_html, PLOTS_DIR, RESULTS_FILE};

/// The options of `mantissa report` (see docs/COMMANDS.md).
#[derive(Args)]
pub struct ReportArgs {
    /// Output directory of a `mantissa study` run (holding results.jsonl).
    #[arg(value_name = "OUT_DIR")]
    out_dir: PathBuf,
    /// Print the tables and write results.csv only; skip report.html and the SVG plots.
    #[arg(long)]
    no_html: bool,
}

/// Loads the directory's records, prints the tables and writes the CSV (and, unless
/// `--no-html`, the HTML report and plots).
pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let (records, notes) = load(&args.out_dir)?;
    if notes.truncated_tail {
        // The study was killed mid-line; that point is simply missing (a resumed run redoes it).
        eprintln!("note: the last line of results.jsonl was incomplete and is skipped");
    }
    if let Some(problem) = &notes.first_problem {
        // Damaged lines cost only themselves: the report covers every record that reads.
        let count = notes.skipped.len();
        let (lines, are) = if count == 1 {
            ("line", "is")
        } else {
            ("lines", "are")
        };
        eprintln!(
            "note: skipped {count} {lines} of {} that {are} not a record ({lines} {}; line {}: {problem}); reporting the {} records that read",
            args.out_dir.join(RESULTS_FILE).display(),
            notes.skipped_lines(5),
            notes.skipped[0],
            records.len(),
        );
    }
    print!("{}", markdown(&records));
    let csv = write_csv(&args.out_dir, &records)?;
    if args.no_html {
        println!("\nWrote {}", csv.display());
    } else {
        let html = write_html(&args.out_dir, &records)?;
        println!(
            "\nWrote {}, {} and {}/",
            html.display(),
            csv.display(),
            args.out_dir.join(PLOTS_DIR).display()
        );
    }
    Ok(())
}
