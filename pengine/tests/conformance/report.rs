//! The report: per feature family and for the whole corpus, how many cases pass every check
//! and how many pass each check, as a Markdown table; plus issue 5's targets.

use super::families::{Family, in_target};
use super::run::{CaseResult, Check};
use std::collections::{BTreeMap, BTreeSet};

/// Counts over a set of cases.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub cases: usize,
    /// Cases passing every check.
    pub passed: usize,
    pub per_check: BTreeMap<Check, usize>,
}

impl Tally {
    pub fn add(&mut self, result: &CaseResult) {
        self.cases += 1;
        if result.passes_all() {
            self.passed += 1;
        }
        for check in Check::ALL {
            if result.passes(check) {
                *self.per_check.entry(check).or_default() += 1;
            }
        }
    }

    pub fn failed(&self) -> usize {
        self.cases - self.passed
    }

    pub fn check(&self, check: Check) -> usize {
        self.per_check.get(&check).copied().unwrap_or(0)
    }

    fn row(&self, label: &str) -> String {
        let mut cells = vec![
            label.to_string(),
            self.cases.to_string(),
            self.passed.to_string(),
            self.failed().to_string(),
        ];
        cells.extend(Check::ALL.iter().map(|c| self.check(*c).to_string()));
        format!("| {} |", cells.join(" | "))
    }
}

/// Tallies per family, in [`Family::ALL`] order, and for all results.
pub fn tally(
    results: &[CaseResult],
    families: &BTreeMap<String, BTreeSet<Family>>,
) -> (Vec<(Family, Tally)>, Tally) {
    let mut per_family: BTreeMap<Family, Tally> = BTreeMap::new();
    let mut all = Tally::default();
    for result in results {
        all.add(result);
        for family in families.get(&result.name).into_iter().flatten() {
            per_family.entry(*family).or_default().add(result);
        }
    }
    let rows = Family::ALL
        .into_iter()
        .filter_map(|f| per_family.remove(&f).map(|t| (f, t)))
        .collect();
    (rows, all)
}

/// The Markdown table and the summary lines.
pub fn render(
    candidate: &str,
    results: &[CaseResult],
    families: &BTreeMap<String, BTreeSet<Family>>,
    corpus_size: usize,
) -> String {
    let (rows, all) = tally(results, families);
    let mut out = format!(
        "Conformance of `{candidate}` against Pacemaker 2.1.5's scheduler corpus \
         (a case passes when summary, graph, dot and scores all match; \
         graph, dot and scores are compared only where the summary matches)\n\n"
    );
    out.push_str("| family | cases | passed | failed | summary | graph | dot | scores |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (family, tally) in &rows {
        out.push_str(&tally.row(family.name()));
        out.push('\n');
    }
    out.push_str(&all.row("**all run**"));
    out.push_str("\n\n");
    for (family, tally) in &rows {
        out.push_str(&format!(
            "{:<18} {} passed, {} failed\n",
            family.name(),
            tally.passed,
            tally.failed()
        ));
    }
    out.push_str(&format!(
        "overall            {} passed, {} failed ({} of the corpus' {corpus_size} cases run)\n",
        all.passed,
        all.failed(),
        all.cases
    ));
    let mut target = Tally::default();
    let mut target_migration = Tally::default();
    for result in results {
        let Some(set) = families.get(&result.name) else {
            continue;
        };
        if in_target(set) {
            target.add(result);
            if set.contains(&Family::Migration) {
                target_migration.add(result);
            }
        }
    }
    out.push_str(&format!(
        "issue 5 target (primitives and groups only): summary {}/{}; \
         their migration cases: graph {}/{}\n",
        target.check(Check::Summary),
        target.cases,
        target_migration.check(Check::Graph),
        target_migration.cases
    ));
    out
}
