//! The committed list of passing cases (`pengine/tests/conformance-passing.txt`): one case a
//! line, `NAME CHECK,CHECK,...`. A listed check that stops passing is a regression; a check that
//! passes but is not listed is reported as newly passing, and recorded by an update.

use super::run::{CaseResult, Check};
use std::collections::{BTreeMap, BTreeSet};

/// Case name to the checks it passed when the list was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassingList {
    pub cases: BTreeMap<String, BTreeSet<Check>>,
}

/// The list's file, beside this harness.
pub fn list_path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance-passing.txt")
}

const HEADER: &str = "\
# Conformance cases pengine passes, with the checks each passes (summary, graph, dot, scores).
# The conformance test fails when a listed check stops passing. Rewrite this file with
#   UPDATE_CONFORMANCE=1 cargo test --release -p pengine --test conformance
# (never by hand). Format: NAME CHECK,CHECK,...
";

pub fn parse(text: &str) -> Result<PassingList, String> {
    let mut list = PassingList::default();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or_default();
        let checks = words.next().unwrap_or_default();
        if words.next().is_some() || checks.is_empty() {
            return Err(format!(
                "line {}: expected `NAME CHECK,...`: {line:?}",
                index + 1
            ));
        }
        let mut set = BTreeSet::new();
        for check in checks.split(',') {
            set.insert(
                Check::from_name(check)
                    .ok_or_else(|| format!("line {}: unknown check {check:?}", index + 1))?,
            );
        }
        if list.cases.insert(name.to_string(), set).is_some() {
            return Err(format!("line {}: {name} listed twice", index + 1));
        }
    }
    Ok(list)
}

pub fn render(list: &PassingList) -> String {
    let mut text = HEADER.to_string();
    for (name, checks) in &list.cases {
        let checks: Vec<&str> = checks.iter().map(|c| c.name()).collect();
        text.push_str(&format!("{name} {}\n", checks.join(",")));
    }
    text
}

/// The list after a run: entries of the cases that ran are replaced by what passed now; other
/// entries are kept.
pub fn updated(list: &PassingList, results: &[CaseResult]) -> PassingList {
    let mut next = list.clone();
    for result in results {
        let passed: BTreeSet<Check> = Check::ALL
            .into_iter()
            .filter(|c| result.passes(*c))
            .collect();
        if passed.is_empty() {
            next.cases.remove(&result.name);
        } else {
            next.cases.insert(result.name.clone(), passed);
        }
    }
    next
}

/// What a run says about the list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Listed checks that failed now, with the reason.
    pub regressions: Vec<(String, Check, String)>,
    /// Passing checks that the list does not have yet.
    pub newly_passing: Vec<(String, Check)>,
    /// Listed cases that are not in the corpus at all.
    pub unknown: Vec<String>,
}

impl Verdict {
    pub fn is_ok(&self) -> bool {
        self.regressions.is_empty() && self.unknown.is_empty()
    }
}

/// Checks the run's results against the list. Only cases that ran are judged; `corpus_names`
/// catches listed cases that do not exist.
pub fn judge(
    list: &PassingList,
    results: &[CaseResult],
    corpus_names: &BTreeSet<String>,
) -> Verdict {
    let mut verdict = Verdict::default();
    for name in list.cases.keys() {
        if !corpus_names.contains(name) {
            verdict.unknown.push(name.clone());
        }
    }
    for result in results {
        let listed = list.cases.get(&result.name);
        for check in Check::ALL {
            let was = listed.is_some_and(|set| set.contains(&check));
            let now = result.passes(check);
            if was && !now {
                let reason = match result.outcomes.get(&check) {
                    Some(super::run::Outcome::Fail(reason)) => reason.clone(),
                    _ => result
                        .first_failure()
                        .map(|(c, r)| format!("{} failed first: {r}", c.name()))
                        .unwrap_or_else(|| "not run".into()),
                };
                verdict
                    .regressions
                    .push((result.name.clone(), check, reason));
            } else if now && !was {
                verdict.newly_passing.push((result.name.clone(), check));
            }
        }
    }
    verdict
}
