//! The attach library's `events.jsonl`, read into types (the protocol is the module doc of
//! `crates/attach/src/lib.rs`): what an application loaded, launched, allocated, copied and set,
//! in call order. A line of a kind this reader does not know is kept as [`Event::Other`]; a line
//! that is not JSON is an error naming the line, since the library writes whole lines only (a
//! killed process loses the lines since the last flush, never half of one).

use serde::Deserialize;
use std::path::Path;

/// A device pointer or handle, as the library writes it (`"0x7f…"`), read as a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Ptr(pub u64);

impl<'de> Deserialize<'de> for Ptr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let hex = s
            .strip_prefix("0x")
            .ok_or_else(|| serde::de::Error::custom(format!("'{s}' is not a 0x pointer")))?;
        u64::from_str_radix(hex, 16)
            .map(Ptr)
            .map_err(|e| serde::de::Error::custom(format!("'{s}': {e}")))
    }
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A module or library loaded.
    Load {
        /// The image's key (`mantissa_fatbin::module_key`), `None` when not recognised.
        module: Option<String>,
        /// `fatbin`, `cubin` or `ptx`.
        kind: Option<String>,
        /// The driver function called.
        via: String,
        /// A replacement was loaded instead.
        #[serde(default)]
        replaced: bool,
        /// The driver's error code, when the load failed.
        error: Option<i64>,
        /// The JIT's log of a refused replacement.
        jit_log: Option<String>,
        /// Why the image was not recognised.
        image_error: Option<String>,
    },
    /// A kernel launched.
    Launch {
        /// The module's key, when the function's origin was seen.
        module: Option<String>,
        /// The kernel's mangled name, when known.
        kernel: Option<String>,
        /// Blocks.
        grid: [u32; 3],
        /// Threads per block.
        block: [u32; 3],
        /// Dynamic shared memory, bytes.
        shared: u64,
        /// Each parameter's bytes, hex; `None` when the driver would not say.
        args: Option<Vec<String>>,
        /// The launch failed with this code.
        error: Option<i64>,
    },
    /// What a kernel uses, once per function at its first launch.
    Function {
        /// The module's key, when the function's origin was seen.
        module: Option<String>,
        /// The kernel's mangled name, when known.
        kernel: Option<String>,
        /// Its resources, as `cuFuncGetAttribute` reports them.
        #[serde(flatten)]
        resources: mantissa_gpu::KernelResources,
    },
    /// Memory allocated.
    Alloc {
        /// Its address.
        ptr: Ptr,
        /// Its size.
        bytes: u64,
        /// `device`, `pitch`, `managed`, `async`, `pool` or `host`.
        kind: String,
    },
    /// Memory freed.
    Free {
        /// Its address.
        ptr: Ptr,
    },
    /// A copy.
    Copy {
        /// `htod`, `dtoh`, `dtod` or `other`.
        dir: String,
        /// Destination.
        dst: Ptr,
        /// Source.
        src: Ptr,
        /// Bytes copied.
        bytes: u64,
        /// The data file (`data/<n>.bin`), when recorded.
        data: Option<String>,
        /// `2d` or `3d` for shaped copies.
        shape: Option<String>,
        /// A shaped copy's rows: bytes per row, rows per slice, slices.
        #[serde(default)]
        width: Option<u64>,
        /// See `width`.
        #[serde(default)]
        height: Option<u64>,
        /// See `width`.
        #[serde(default)]
        depth: Option<u64>,
        /// A shaped copy's bytes from one row to the next, on the device side it reads
        /// (`src_pitch`) and writes (`dst_pitch`).
        #[serde(default)]
        src_pitch: Option<u64>,
        /// See `src_pitch`.
        #[serde(default)]
        dst_pitch: Option<u64>,
        /// The copy failed with this code.
        error: Option<i64>,
    },
    /// A memset.
    Memset {
        /// Destination.
        dst: Ptr,
        /// The value.
        value: u64,
        /// Element width, bytes.
        width: u32,
        /// Elements.
        count: u64,
    },
    /// A `__constant__` or `__device__` variable's address looked up by the application.
    Global {
        /// The module's key, when its load was seen.
        module: Option<String>,
        /// The variable's PTX name.
        symbol: String,
        /// Its address.
        ptr: Ptr,
        /// Its size, when the application asked.
        bytes: Option<u64>,
    },
    /// A module global read back.
    Read {
        /// The module's key.
        module: String,
        /// The symbol.
        symbol: String,
        /// Where its bytes are.
        file: Option<String>,
        /// Why it could not be read.
        error: Option<String>,
    },
    /// A kernel's total time so far.
    KernelTime {
        /// The module's key.
        module: Option<String>,
        /// The kernel.
        kernel: Option<String>,
        /// Milliseconds in all.
        ms: f64,
        /// Launches timed.
        launches: u64,
    },
    /// Something the library itself could not do.
    Error {
        /// What.
        message: String,
    },
    /// The log's end: `exit` (the process exited normally) or `teardown`.
    End {
        /// How.
        how: String,
    },
    /// A kind this reader does not use (`proc_miss`, a newer library's).
    #[serde(other)]
    Other,
}

/// Why a log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    /// The file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The log.
        path: String,
        /// The system's message.
        message: String,
    },
    /// A line is not an event.
    #[error("{path}:{line}: not an attach event: {message}")]
    Line {
        /// The log.
        path: String,
        /// 1-based.
        line: usize,
        /// serde's message.
        message: String,
    },
}

/// The events of `path`, in order. A missing file is no events (the application never touched
/// the driver).
pub fn read(path: &Path) -> Result<Vec<Event>, EventsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(EventsError::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            })
        }
    };
    parse(&text).map_err(|(line, message)| EventsError::Line {
        path: path.display().to_string(),
        line,
        message,
    })
}

/// The events of a log's text; on error, the 1-based line and why.
pub fn parse(text: &str) -> Result<Vec<Event>, (usize, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(k, l)| serde_json::from_str(l).map_err(|e| (k + 1, e.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_and_unknown_kinds_are_kept_as_other() {
        let log = r#"{"event":"load","seq":0,"module":"00ff00ff00ff00ff","kind":"fatbin","via":"cuLibraryLoadData","replaced":false,"handle":"0x55"}
{"event":"alloc","seq":1,"ptr":"0x7f0000000000","bytes":4096,"kind":"device"}
{"event":"copy","seq":2,"dir":"htod","dst":"0x7f0000000000","src":"0x1000","bytes":4096,"stream":null,"via":"cuMemcpyHtoD_v2","per_thread":false}
{"event":"launch","seq":3,"module":"00ff00ff00ff00ff","kernel":"_Z4axpyPdd","grid":[4,1,1],"block":[256,1,1],"shared":0,"stream":"0x0","args":["00000000007f0000","000000000000f03f"],"via":"cuLaunchKernel","per_thread":false}
{"event":"memset","seq":4,"dst":"0x7f0000000000","value":0,"width":1,"count":16,"stream":null,"per_thread":false}
{"event":"proc_miss","seq":5,"symbol":"cuLaunchKernel","version":12000,"flags":0,"ptr":"0x1"}
{"event":"kernel_time","seq":6,"module":"00ff00ff00ff00ff","kernel":"_Z4axpyPdd","ms":0.25,"launches":1}
{"event":"end","seq":7,"how":"exit"}
{"event":"global","seq":9,"module":"00ff00ff00ff00ff","symbol":"coef","ptr":"0x7f0000100000","bytes":24}
{"event":"function","seq":8,"module":"00ff00ff00ff00ff","kernel":"_Z4axpyPdd","registers":40,"local_bytes":8,"static_shared_bytes":0,"const_bytes":0,"max_threads_per_block":1024,"ptx_version":90,"binary_version":90}
"#;
        let events = parse(log).unwrap();
        assert_eq!(events.len(), 10);
        assert!(
            matches!(&events[8], Event::Global { symbol, ptr: Ptr(0x7f00_0010_0000), bytes: Some(24), .. } if symbol == "coef")
        );
        assert!(
            matches!(&events[9], Event::Function { kernel: Some(k), resources, .. } if k == "_Z4axpyPdd" && resources.registers == 40 && resources.local_bytes == 8)
        );
        assert!(
            matches!(&events[0], Event::Load { module: Some(m), replaced: false, .. } if m == "00ff00ff00ff00ff")
        );
        assert_eq!(
            events[1],
            Event::Alloc {
                ptr: Ptr(0x7f00_0000_0000),
                bytes: 4096,
                kind: "device".into()
            }
        );
        assert!(
            matches!(&events[2], Event::Copy { dir, bytes: 4096, data: None, .. } if dir == "htod")
        );
        match &events[3] {
            Event::Launch {
                grid, block, args, ..
            } => {
                assert_eq!((grid[0], block[0]), (4, 256));
                assert_eq!(args.as_ref().map(Vec::len), Some(2));
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(events[5], Event::Other);
        assert!(matches!(&events[7], Event::End { how } if how == "exit"));
    }

    #[test]
    fn a_broken_line_is_named() {
        let err =
            parse("{\"event\":\"end\",\"how\":\"exit\"}\n{\"event\":\"alloc\",\"ptr\":\"7f\"}\n")
                .unwrap_err();
        assert_eq!(err.0, 2);
        assert!(err.1.contains("0x"), "{}", err.1);
    }
}
