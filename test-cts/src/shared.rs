//! Locating `../shared` (the conformance corpus, the OCF schema, the infra scripts) from any test.

use std::path::PathBuf;

/// The `shared/` directory beside the workspace, or `$HIGHLANDER_SHARED`; `None` when absent.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("HIGHLANDER_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    dir.is_dir().then(|| dir.canonicalize().unwrap_or(dir))
}

/// Says loudly that a test is skipped because `../shared` is absent; panics under CI, where
/// it is always present and a skip would hide a broken test.
pub fn skip_without_shared(test: &str) {
    let msg = format!(
        "SKIPPED {test}: ../shared (or $HIGHLANDER_SHARED) is absent, so the conformance data is not here"
    );
    assert!(std::env::var_os("CI").is_none(), "{msg}; CI must not skip");
    eprintln!("{msg}");
}
