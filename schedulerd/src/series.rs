//! The saved scheduler inputs, kept as Pacemaker 2.1.5 keeps them: `<dir>/<series>-<N>.bz2`
//! (a bzip2-compressed CIB with its `execution-date`), the next number in `<dir>/<series>.last`,
//! wrapping at the `<series>-series-max` cluster option (-1 keeps all, 0 saves none).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::ffi;

/// Pacemaker's scheduler state directory.
pub const STATE_DIR: &str = "/var/lib/pacemaker/pengine";

/// One series of saved inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Series {
    /// The scheduler found errors.
    Error,
    /// The scheduler found warnings.
    Warn,
    /// A clean input.
    Input,
}

impl Series {
    /// The file name prefix.
    pub fn name(self) -> &'static str {
        match self {
            Series::Error => "pe-error",
            Series::Warn => "pe-warn",
            Series::Input => "pe-input",
        }
    }

    /// The cluster option that bounds it.
    pub fn option(self) -> &'static str {
        match self {
            Series::Error => "pe-error-series-max",
            Series::Warn => "pe-warn-series-max",
            Series::Input => "pe-input-series-max",
        }
    }

    /// Its bound when the option is unset or invalid.
    pub fn default_wrap(self) -> i64 {
        match self {
            Series::Error => -1,
            Series::Warn => 5000,
            Series::Input => 4000,
        }
    }

    /// The bound an option value gives (an integer, at least -1; otherwise the default).
    pub fn wrap(self, option: Option<&str>) -> i64 {
        option
            .and_then(|v| v.trim().parse::<i64>().ok())
            .map(|n| n.max(-1))
            .unwrap_or(self.default_wrap())
    }
}

/// The number the next input of `series` gets (0 when the sequence file is missing or bad).
pub fn read_sequence(dir: &Path, series: Series) -> u32 {
    fs::read_to_string(dir.join(format!("{}.last", series.name())))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(0)
}

/// Records `next` as the number the next input gets, wrapped at `wrap` (nothing when 0).
pub fn write_sequence(dir: &Path, series: Series, next: u32, wrap: i64) -> io::Result<()> {
    if wrap == 0 {
        return Ok(());
    }
    let next = if wrap > 0 && i64::from(next) >= wrap {
        0
    } else {
        next
    };
    fs::write(
        dir.join(format!("{}.last", series.name())),
        next.to_string(),
    )
}

/// `<dir>/<series>-<seq>.bz2`.
pub fn file_name(dir: &Path, name: &str, seq: u32) -> PathBuf {
    dir.join(format!("{name}-{seq}.bz2"))
}

/// Writes `xml` bzip2-compressed to `path` (replacing it), readable by `crm_simulate -x`.
pub fn write_bz2(path: &Path, xml: &str) -> io::Result<()> {
    // bzip2 never grows data by more than 1% + 600 bytes.
    let max = xml.len() + xml.len() / 50 + 1024;
    let packed = ffi::bz2_compress(xml.as_bytes(), max)
        .ok_or_else(|| io::Error::other("bzip2 compression failed"))?;
    let tmp = path.with_extension("bz2.tmp");
    fs::write(&tmp, packed)?;
    fs::rename(&tmp, path)
}

/// Reads a `.bz2` input back (at most `max_len` bytes of XML).
pub fn read_bz2(path: &Path, max_len: usize) -> io::Result<String> {
    let packed = fs::read(path)?;
    let xml = ffi::bz2_decompress(&packed, max_len)
        .map_err(|rc| io::Error::other(format!("bzip2 error {rc} in {}", path.display())))?;
    String::from_utf8(xml).map_err(|_| io::Error::other("input is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_wraps_and_zero_disables() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read_sequence(d.path(), Series::Input), 0);
        write_sequence(d.path(), Series::Input, 3, 4000).unwrap();
        assert_eq!(read_sequence(d.path(), Series::Input), 3);
        write_sequence(d.path(), Series::Input, 4, 4).unwrap();
        assert_eq!(read_sequence(d.path(), Series::Input), 0);
        write_sequence(d.path(), Series::Warn, 9, 0).unwrap();
        assert!(!d.path().join("pe-warn.last").exists());
        assert_eq!(Series::Warn.wrap(Some("x")), 5000);
        assert_eq!(Series::Error.wrap(Some("-7")), -1);
    }

    #[test]
    fn bz2_files_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let p = file_name(d.path(), "pe-input", 2);
        write_bz2(&p, "<cib/>").unwrap();
        assert_eq!(read_bz2(&p, 1 << 20).unwrap(), "<cib/>");
    }
}
