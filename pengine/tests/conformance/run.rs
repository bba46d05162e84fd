//! Running a candidate `crm_simulate`-like binary on corpus cases: two runs per case (the summary
//! with `-S`, then the artifacts with `-G -D -s -S -Q` and the case's extra arguments), each in
//! `LC_ALL=C` with a timeout, the cases spread over worker threads.

use super::compare;
use super::corpus::{Case, CaseFiles};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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

    pub fn from_name(name: &str) -> Option<Check> {
        Check::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// The result of one check on one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail(String),
    /// Not compared because the summary already differs.
    NotRun,
}

/// All checks of one case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub name: String,
    pub outcomes: BTreeMap<Check, Outcome>,
}

impl CaseResult {
    pub fn passes(&self, check: Check) -> bool {
        self.outcomes.get(&check) == Some(&Outcome::Pass)
    }

    pub fn passes_all(&self) -> bool {
        Check::ALL.iter().all(|c| self.passes(*c))
    }

    /// The first failure's reason, for reports.
    pub fn first_failure(&self) -> Option<(Check, &str)> {
        self.outcomes
            .iter()
            .find_map(|(check, outcome)| match outcome {
                Outcome::Fail(reason) => Some((*check, reason.as_str())),
                _ => None,
            })
    }
}

/// The program under test and the arguments before crm_simulate's flags (`simulate` for pengine).
#[derive(Clone, Debug)]
pub struct Candidate {
    pub program: PathBuf,
    pub prefix: Vec<String>,
}

impl Candidate {
    /// Parses a command line such as `crm_simulate` or `/path/to/pengine simulate`.
    pub fn parse(command: &str) -> Option<Candidate> {
        let mut words = command.split_whitespace();
        let program = PathBuf::from(words.next()?);
        Some(Candidate {
            program,
            prefix: words.map(str::to_string).collect(),
        })
    }

    pub fn describe(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.prefix.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How to run the cases.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Per run; a case makes two runs.
    pub timeout: Duration,
    pub jobs: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            timeout: Duration::from_secs(30),
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// Runs `command` with stdout and stderr going to the given files, killing it after `timeout`.
fn run_bounded(
    mut command: Command,
    stdout: File,
    stderr: File,
    timeout: Duration,
) -> Result<ExitStatus, String> {
    command
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    let started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", command.get_program()))?;
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "timed out after {} s, killed",
                    timeout.as_secs_f64()
                ));
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("waiting for the candidate: {e}")),
        }
    }
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "unknown exit".to_string(),
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn create(path: &Path) -> Result<File, String> {
    File::create(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The summary run: `-x XML -S`, stdout and stderr into one file. Like Pacemaker 2.1.5's own
/// harness (and the stored summaries), it omits the case's extra arguments.
fn check_summary(
    files: &CaseFiles,
    candidate: &Candidate,
    work: &Path,
    timeout: Duration,
) -> Result<(), String> {
    let out_path = work.join("summary.out");
    let out = create(&out_path)?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut command = Command::new(&candidate.program);
    command
        .args(&candidate.prefix)
        .arg("-x")
        .arg(&files.xml)
        .arg("-S");
    command.current_dir(work);
    let status = run_bounded(command, out, err, timeout)?;
    let actual = read(&out_path)?;
    if !status.success() {
        let tail: Vec<&str> = actual.lines().rev().take(2).collect();
        return Err(format!(
            "{}; last output: {:?}",
            describe_status(status),
            tail
        ));
    }
    compare::compare_summary(&read(&files.summary)?, &actual)
}

/// The artifacts run: `-x XML -G graph -D dot -s -S -Q [extra args]`; stdout is the scores.
/// It must exit 0 with stderr empty (or equal to the stored stderr). Returns the outcome of
/// graph, DOT and scores.
fn check_artifacts(
    case: &Case,
    files: &CaseFiles,
    candidate: &Candidate,
    work: &Path,
    timeout: Duration,
) -> [(Check, Outcome); 3] {
    let fail_all = |reason: String| {
        [
            (Check::Graph, Outcome::Fail(reason.clone())),
            (Check::Dot, Outcome::Fail(reason.clone())),
            (Check::Scores, Outcome::Fail(reason)),
        ]
    };
    let (graph, dot) = (work.join("graph.xml"), work.join("graph.dot"));
    let (scores, stderr) = (work.join("scores.out"), work.join("stderr.out"));
    let run = || -> Result<(), String> {
        let mut command = Command::new(&candidate.program);
        command
            .args(&candidate.prefix)
            .arg("-x")
            .arg(&files.xml)
            .arg("-G")
            .arg(&graph)
            .arg("-D")
            .arg(&dot)
            .args(["-s", "-S", "-Q"])
            .args(&case.extra_args)
            .current_dir(work);
        let status = run_bounded(command, create(&scores)?, create(&stderr)?, timeout)?;
        let err_text = read(&stderr)?;
        if !status.success() {
            return Err(format!(
                "artifacts run: {}; stderr: {:?}",
                describe_status(status),
                err_text.lines().next().unwrap_or_default()
            ));
        }
        let want_err = if files.stderr.is_file() {
            read(&files.stderr)?
        } else {
            String::new()
        };
        compare::compare_summary(&want_err, &err_text).map_err(|e| format!("stderr: {e}"))
    };
    if let Err(reason) = run() {
        return fail_all(reason);
    }
    let outcome = |result: Result<(), String>| match result {
        Ok(()) => Outcome::Pass,
        Err(reason) => Outcome::Fail(reason),
    };
    let compare_files = |want: &Path, got: &Path, how: fn(&str, &str) -> Result<(), String>| {
        outcome(read(want).and_then(|w| {
            let g = read(got).map_err(|e| format!("candidate wrote no file: {e}"))?;
            how(&w, &g)
        }))
    };
    [
        (
            Check::Graph,
            compare_files(&files.exp, &graph, compare::compare_graph),
        ),
        (
            Check::Dot,
            compare_files(&files.dot, &dot, compare::compare_dot),
        ),
        (
            Check::Scores,
            compare_files(&files.scores, &scores, compare::compare_scores),
        ),
    ]
}

/// Runs one case in its own scratch directory.
pub fn run_case(
    corpus: &Path,
    case: &Case,
    candidate: &Candidate,
    timeout: Duration,
) -> CaseResult {
    let files = CaseFiles::new(corpus, &case.name);
    let mut outcomes = BTreeMap::new();
    let work = match tempfile::Builder::new()
        .prefix(&format!("conformance-{}-", case.name))
        .tempdir()
    {
        Ok(dir) => dir,
        Err(e) => {
            outcomes.insert(
                Check::Summary,
                Outcome::Fail(format!("no scratch dir: {e}")),
            );
            return CaseResult {
                name: case.name.clone(),
                outcomes,
            };
        }
    };
    match check_summary(&files, candidate, work.path(), timeout) {
        Ok(()) => {
            outcomes.insert(Check::Summary, Outcome::Pass);
            outcomes.extend(check_artifacts(
                case,
                &files,
                candidate,
                work.path(),
                timeout,
            ));
        }
        Err(reason) => {
            outcomes.insert(Check::Summary, Outcome::Fail(reason));
            for check in [Check::Graph, Check::Dot, Check::Scores] {
                outcomes.insert(check, Outcome::NotRun);
            }
        }
    }
    CaseResult {
        name: case.name.clone(),
        outcomes,
    }
}

/// Runs every case on `options.jobs` threads; results come back in the order of `cases`.
pub fn run_all(
    corpus: &Path,
    cases: &[Case],
    candidate: &Candidate,
    options: &RunOptions,
) -> Vec<CaseResult> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<CaseResult>>> = Mutex::new(vec![None; cases.len()]);
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(index) else { break };
                    let result = run_case(corpus, case, candidate, options.timeout);
                    let mut slots = results.lock().unwrap_or_else(|p| p.into_inner());
                    slots[index] = Some(result);
                }
            });
        }
    });
    let slots = results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    slots
        .into_iter()
        .zip(cases)
        .map(|(slot, case)| {
            slot.unwrap_or_else(|| CaseResult {
                name: case.name.clone(),
                outcomes: BTreeMap::from([(
                    Check::Summary,
                    Outcome::Fail("the harness worker running it panicked".into()),
                )]),
            })
        })
        .collect()
}
