//! Where `pengine simulate` reads its CIB (crm_simulate's `-x`, `-p` and `-L`), and its `-P`
//! profiling of a directory of CIBs.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The CIB's source.
pub enum Source {
    /// `-x FILE`.
    File(PathBuf),
    /// `-p`, or no source flag at all (crm_simulate's default).
    Stdin,
    /// `-L`: what `cibadmin -Q` answers (the running cluster, or `CIB_file`/`CIB_shadow`).
    Live,
}

impl Source {
    /// The source the flags name.
    pub fn from_flags(xml_file: Option<&Path>, live: bool) -> Source {
        match (xml_file, live) {
            (Some(path), _) => Source::File(path.to_path_buf()),
            (None, true) => Source::Live,
            (None, false) => Source::Stdin,
        }
    }

    /// How errors name it.
    pub fn label(&self) -> String {
        match self {
            Source::File(path) => path.display().to_string(),
            Source::Stdin => "stdin".into(),
            Source::Live => "the live CIB".into(),
        }
    }

    /// The CIB's text.
    pub fn read(&self) -> Result<String, String> {
        match self {
            Source::File(path) => read_file(path),
            Source::Stdin => {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| format!("cannot read the CIB from stdin: {e}"))?;
                Ok(text)
            }
            Source::Live => live_cib(),
        }
    }
}

/// Reads a CIB file, plain or bzip2-compressed (the scheduler's saved `pe-input-N.bz2`,
/// decompressed by the system's `bzip2`).
fn read_file(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !bytes.starts_with(b"BZh") {
        return String::from_utf8(bytes)
            .map_err(|e| format!("{}: not valid UTF-8 ({})", path.display(), e.utf8_error()));
    }
    let out = std::process::Command::new("bzip2")
        .arg("-dc")
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run bzip2 for {}: {e}", path.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{}: bzip2 -dc failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout)
        .map_err(|e| format!("{}: not valid UTF-8 ({})", path.display(), e.utf8_error()))
}

/// `cibadmin -Q`: the live CIB, as crm_simulate -L reads it.
fn live_cib() -> Result<String, String> {
    let out = std::process::Command::new("cibadmin")
        .arg("-Q")
        .output()
        .map_err(|e| format!("-L: cannot run cibadmin -Q: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "-L: CIB query failed (cibadmin -Q): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout).map_err(|_| "-L: cibadmin -Q answered no UTF-8 text".into())
}

/// The XML files `-P DIR` profiles, in crm_simulate's order: regular files whose name ends in
/// `.xml` and does not start with a dot, by name, last first.
pub fn profiled_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("-P: cannot read {}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && n.ends_with(".xml"))
        .collect();
    names.sort();
    names.reverse();
    let dir_text = dir.to_string_lossy();
    Ok(names
        .into_iter()
        .map(|n| PathBuf::from(format!("{dir_text}/{n}")))
        .filter(|p| p.is_file())
        .collect())
}

/// `-P DIR [-N N]`: plans each file N times and prints the time it took, as crm_simulate's
/// "Timings" list (wall-clock time here; crm_simulate measures CPU time). A file that is no CIB
/// is reported on stderr and skipped.
pub fn profile(dir: &Path, repeat: u32, date: Option<i64>, now: i64) -> Result<(), String> {
    let files = profiled_files(dir)?;
    if files.is_empty() {
        return Ok(());
    }
    println!("Timings:");
    for path in files {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let start = std::time::Instant::now();
        let cib = match pengine::Cib::parse(&text) {
            Ok(cib) => cib,
            Err(e) => {
                eprintln!("pengine: {}: {e}", path.display());
                continue;
            }
        };
        let at = date.or(cib.execution_date).unwrap_or(now);
        for _ in 0..repeat {
            std::hint::black_box(cib.plan(at));
        }
        let secs = start.elapsed().as_secs_f64();
        println!("  * Testing {} ... {secs:.2} secs", path.display());
    }
    Ok(())
}
