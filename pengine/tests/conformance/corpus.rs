//! Locating the corpus (`testdata/pacemaker-2.1.5`, kept in the repository) and reading its case
//! list, `tests.tsv` (name, description, extra arguments).

use std::path::{Path, PathBuf};

/// The corpus folder inside the workspace.
pub const CORPUS_SUBDIR: &str = "testdata/pacemaker-2.1.5";

/// One regression case of the corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub name: String,
    pub description: String,
    /// Extra `crm_simulate` arguments (only the date cases have some: `-t DATE`).
    pub extra_args: Vec<String>,
}

/// The workspace root: the parent of the `pengine` package.
pub fn workspace_root() -> PathBuf {
    let pengine = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    pengine.parent().map(Path::to_path_buf).unwrap_or(pengine)
}

/// The corpus folder. A clone always has it, so its absence is a broken checkout: the test
/// fails here, naming the folder, rather than passing without having looked at anything.
pub fn corpus_dir() -> PathBuf {
    let dir = workspace_root().join(CORPUS_SUBDIR);
    assert!(
        dir.join("tests.tsv").is_file(),
        "the Pacemaker 2.1.5 corpus {} is missing or incomplete (no tests.tsv): it is part of \
         the repository; restore it with `git checkout -- {CORPUS_SUBDIR}`",
        dir.display()
    );
    dir
}

/// Parses `tests.tsv`: a header line, then `name<TAB>description<TAB>extra args`.
pub fn parse_cases(tsv: &str) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for (index, line) in tsv.lines().enumerate() {
        if index == 0 || line.trim().is_empty() {
            continue; // the header, blank lines
        }
        let mut fields = line.split('\t');
        let name = fields.next().unwrap_or_default().trim();
        if name.is_empty() {
            return Err(format!("tests.tsv line {}: no case name", index + 1));
        }
        let description = fields.next().unwrap_or_default().trim().to_string();
        let extra_args = fields
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        cases.push(Case {
            name: name.to_string(),
            description,
            extra_args,
        });
    }
    Ok(cases)
}

/// Reads the corpus' `tests.tsv`.
pub fn read_cases(corpus: &Path) -> Result<Vec<Case>, String> {
    let path = corpus.join("tests.tsv");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_cases(&text)
}

/// The expected files and the input of one case.
pub struct CaseFiles {
    pub xml: PathBuf,
    pub summary: PathBuf,
    pub exp: PathBuf,
    pub dot: PathBuf,
    pub scores: PathBuf,
    pub stderr: PathBuf,
}

impl CaseFiles {
    pub fn new(corpus: &Path, name: &str) -> Self {
        CaseFiles {
            xml: corpus.join("xml").join(format!("{name}.xml")),
            summary: corpus.join("summary").join(format!("{name}.summary")),
            exp: corpus.join("exp").join(format!("{name}.exp")),
            dot: corpus.join("dot").join(format!("{name}.dot")),
            scores: corpus.join("scores").join(format!("{name}.scores")),
            stderr: corpus.join("stderr").join(format!("{name}.stderr")),
        }
    }
}
