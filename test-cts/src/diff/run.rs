//! Running both schedulers on one CIB and comparing them as the conformance harness does
//! (`pengine/tests/conformance/compare.rs`): the summary run `-x CIB -S` (stdout and stderr
//! together, compared ignoring whitespace), then the artifacts run `-x CIB -G graph -D dot -s
//! -S -Q` (graph compared structurally, DOT as a set of lines, scores sorted).

use super::compare;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What is compared, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    Summary,
    Graph,
    Dot,
    Scores,
}

impl Check {
    pub const ALL: [Check; 4] = [Check::Summary, Check::Graph, Check::Dot, Check::Scores];

    pub fn name(self) -> &'static str {
        match self {
            Check::Summary => "summary",
            Check::Graph => "graph",
            Check::Dot => "dot",
            Check::Scores => "scores",
        }
    }
}

/// A scheduler command: the program and the words before crm_simulate's flags.
#[derive(Clone, Debug)]
pub struct Tool {
    pub program: PathBuf,
    pub prefix: Vec<String>,
}

impl Tool {
    /// Parses a command line such as `crm_simulate` or `/path/to/pengine simulate`; a relative
    /// path is made absolute (the tools run in scratch directories).
    pub fn parse(command: &str) -> Option<Tool> {
        let mut words = command.split_whitespace();
        let program = PathBuf::from(words.next()?);
        let program = if program.components().count() > 1 {
            std::path::absolute(&program).unwrap_or(program)
        } else {
            program
        };
        Some(Tool {
            program,
            prefix: words.map(str::to_string).collect(),
        })
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.prefix)
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        command
    }
}

/// What one tool printed for one CIB.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    pub summary: String,
    pub graph: String,
    pub dot: String,
    pub scores: String,
    pub stderr: String,
    /// The exit codes of the two runs (crm_simulate exits 1 on an invalid transition).
    pub codes: (Option<i32>, Option<i32>),
}

/// The verdict on one CIB.
#[derive(Clone, Debug)]
pub enum Verdict {
    /// crm_verify rejects it: not compared.
    Invalid(String),
    /// Each check's difference (`None`: identical).
    Compared(BTreeMap<Check, Option<String>>),
}

impl Verdict {
    pub fn differs(&self) -> bool {
        match self {
            Verdict::Invalid(_) => false,
            Verdict::Compared(checks) => checks.values().any(Option::is_some),
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `crm_verify -x CIB`: `Err` with its output when it finds an error.
pub fn verify(cib: &Path) -> Result<(), String> {
    let out = Command::new("crm_verify")
        .arg("-x")
        .arg(cib)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run crm_verify: {e}"))?;
    // Warnings (an unclean node, a resource requiring fencing without it) are no rejection.
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    if out.status.success() || (said.contains("Warnings found") && !said.contains("Errors found")) {
        Ok(())
    } else {
        Err(said)
    }
}

/// Runs `tool` on `cib` twice (summary; artifacts), in `work`, which must exist.
pub fn outputs(tool: &Tool, cib: &Path, work: &Path, artifacts: bool) -> Result<Outputs, String> {
    let out = tool
        .command()
        .arg("-x")
        .arg(cib)
        .arg("-S")
        .current_dir(work)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tool.program.display()))?;
    let mut result = Outputs {
        summary: format!("{}{}", text(&out.stdout), text(&out.stderr)),
        ..Outputs::default()
    };
    result.codes.0 = out.status.code();
    if out.status.code().is_none() {
        return Err(format!("summary run: {}: {}", out.status, result.summary));
    }
    if !artifacts {
        return Ok(result);
    }
    let (graph, dot) = (work.join("graph.xml"), work.join("graph.dot"));
    let out = tool
        .command()
        .arg("-x")
        .arg(cib)
        .arg("-G")
        .arg(&graph)
        .arg("-D")
        .arg(&dot)
        .args(["-s", "-S", "-Q"])
        .current_dir(work)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tool.program.display()))?;
    result.scores = text(&out.stdout);
    result.stderr = text(&out.stderr);
    result.codes.1 = out.status.code();
    if out.status.code().is_none() {
        return Err(format!("artifacts run: {}: {}", out.status, result.stderr));
    }
    result.graph = std::fs::read_to_string(&graph).unwrap_or_default();
    result.dot = std::fs::read_to_string(&dot).unwrap_or_default();
    Ok(result)
}

/// Compares the candidate's outputs with the oracle's, check by check.
pub fn compare_outputs(
    oracle: &Outputs,
    candidate: &Outputs,
    artifacts: bool,
) -> BTreeMap<Check, Option<String>> {
    let mut checks = BTreeMap::new();
    let codes = (oracle.codes != candidate.codes).then(|| {
        format!(
            "exit codes differ: expected {:?}, got {:?}",
            oracle.codes, candidate.codes
        )
    });
    let summary = compare::compare_summary(&oracle.summary, &candidate.summary).err();
    checks.insert(Check::Summary, summary.or(codes));
    if artifacts {
        let graph = compare::compare_graph(&oracle.graph, &candidate.graph).err();
        let dot = compare::compare_dot(&oracle.dot, &candidate.dot).err();
        let scores = compare::compare_scores(&oracle.scores, &candidate.scores).err();
        let stderr = compare::compare_summary(&oracle.stderr, &candidate.stderr)
            .err()
            .map(|e| format!("stderr: {e}"));
        checks.insert(Check::Graph, graph.or(stderr));
        checks.insert(Check::Dot, dot);
        checks.insert(Check::Scores, scores);
    }
    checks
}

/// Checks `cib` with crm_verify, then compares `candidate` with crm_simulate on it. With
/// `artifacts` false only the summary is compared (the shrinker's quick check).
pub fn judge(candidate: &Tool, cib: &Path, artifacts: bool) -> Result<Verdict, String> {
    if let Err(e) = verify(cib) {
        return Ok(Verdict::Invalid(e));
    }
    let oracle_tool = Tool::parse("crm_simulate").ok_or("no oracle")?;
    let work = tempfile_dir()?;
    let oracle_dir = work.join("oracle");
    let candidate_dir = work.join("candidate");
    for dir in [&oracle_dir, &candidate_dir] {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let result = (|| {
        let oracle = outputs(&oracle_tool, cib, &oracle_dir, artifacts)
            .map_err(|e| format!("crm_simulate failed on a CIB crm_verify accepts: {e}"))?;
        let checks = match outputs(candidate, cib, &candidate_dir, artifacts) {
            Ok(ours) => compare_outputs(&oracle, &ours, artifacts),
            Err(e) => Check::ALL
                .iter()
                .filter(|c| artifacts || **c == Check::Summary)
                .map(|c| (*c, Some(format!("candidate failed: {e}"))))
                .collect(),
        };
        Ok(Verdict::Compared(checks))
    })();
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// A fresh scratch directory under the system's temporary directory.
fn tempfile_dir() -> Result<PathBuf, String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("cts-diff-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// A difference's class: the check and its reason with names and numbers masked, so that
/// differences of the same kind on different resources group together.
pub fn class(check: Check, reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut last_masked = false;
    for word in reason.split_inclusive(|c: char| !c.is_alphanumeric() && c != '-' && c != '_') {
        let (core, tail) = word.split_at(
            word.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
                .len(),
        );
        let masked = mask(core);
        if masked != core {
            if !last_masked {
                out.push_str(masked);
            }
            last_masked = true;
        } else {
            out.push_str(core);
            last_masked = false;
        }
        out.push_str(tail);
    }
    let cut: String = out.chars().take(160).collect();
    format!("{}: {cut}", check.name())
}

fn mask(word: &str) -> &str {
    let numeric = !word.is_empty() && word.chars().all(|c| c.is_ascii_digit());
    let named = ["vm", "node", "fencing", "ticket"].iter().any(|p| {
        word.starts_with(p)
            && word.len() > p.len()
            && word[p.len()..].starts_with(|c: char| c.is_ascii_digit() || c == '-')
    });
    if numeric {
        "N"
    } else if named {
        "X"
    } else {
        word
    }
}
