//! A block of seeds: generate each CIB, judge it on worker threads, keep the differing ones,
//! and tally the identical rate per check, per feature and the most frequent difference classes.

use super::generator::generate;
use super::run::{Check, Tool, Verdict, class, judge};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One seed's result.
pub struct SeedResult {
    pub seed: u64,
    pub features: BTreeSet<String>,
    pub verdict: Result<Verdict, String>,
}

pub struct Report {
    pub results: Vec<SeedResult>,
}

/// Judges one seed; a differing CIB is written to `keep` as `seed-N.xml`, with its reasons.
fn one_seed(candidate: &Tool, seed: u64, work: &Path, keep: Option<&Path>) -> SeedResult {
    let generated = generate(seed);
    let file = work.join(format!("seed-{seed}.xml"));
    let verdict = std::fs::write(&file, &generated.xml)
        .map_err(|e| format!("{}: {e}", file.display()))
        .and_then(|()| judge(candidate, &file, true));
    if let (Some(dir), Ok(v)) = (keep, &verdict) {
        if v.differs() {
            let _ = std::fs::copy(&file, dir.join(format!("seed-{seed}.xml")));
            let _ = std::fs::write(dir.join(format!("seed-{seed}.txt")), describe(v));
        }
    }
    let _ = std::fs::remove_file(&file);
    SeedResult {
        seed,
        features: generated.features,
        verdict,
    }
}

fn describe(verdict: &Verdict) -> String {
    let mut out = String::new();
    if let Verdict::Compared(checks) = verdict {
        for (check, reason) in checks {
            if let Some(reason) = reason {
                let _ = writeln!(out, "{}: {reason}", check.name());
            }
        }
    }
    out
}

/// Runs `seeds` on `jobs` threads.
pub fn run_seeds(
    candidate: &Tool,
    seeds: &[u64],
    jobs: usize,
    keep: Option<&Path>,
) -> Result<Report, String> {
    let work: PathBuf = std::env::temp_dir().join(format!("cts-diff-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    if let Some(dir) = keep {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                while let Some(&seed) = seeds.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let result = one_seed(candidate, seed, &work, keep);
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(result);
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&work);
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|r| r.seed);
    Ok(Report { results })
}

impl Report {
    /// The compared results (valid CIBs on which both tools ran).
    fn compared(&self) -> impl Iterator<Item = (&SeedResult, &BTreeMap<Check, Option<String>>)> {
        self.results.iter().filter_map(|r| match &r.verdict {
            Ok(Verdict::Compared(checks)) => Some((r, checks)),
            _ => None,
        })
    }

    pub fn compared_count(&self) -> usize {
        self.compared().count()
    }

    pub fn invalid(&self) -> Vec<(u64, String)> {
        self.results
            .iter()
            .filter_map(|r| match &r.verdict {
                Ok(Verdict::Invalid(e)) => Some((r.seed, e.clone())),
                Err(e) => Some((r.seed, e.clone())),
                _ => None,
            })
            .collect()
    }

    /// Identical CIBs per check, and on all checks: (name, identical, compared).
    pub fn check_rates(&self) -> Vec<(String, usize, usize)> {
        let total = self.compared_count();
        let mut rates: Vec<(String, usize, usize)> = Check::ALL
            .iter()
            .map(|c| {
                let same = self
                    .compared()
                    .filter(|(_, m)| m.get(c).is_some_and(Option::is_none))
                    .count();
                (c.name().to_string(), same, total)
            })
            .collect();
        let all = self
            .compared()
            .filter(|(_, m)| m.values().all(Option::is_none))
            .count();
        rates.push(("all".into(), all, total));
        rates
    }

    /// Per feature: (feature, identical on all checks, CIBs with it).
    pub fn feature_rates(&self) -> Vec<(String, usize, usize)> {
        let mut tally: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (r, checks) in self.compared() {
            let same = checks.values().all(Option::is_none);
            for f in &r.features {
                let entry = tally.entry(f.as_str()).or_default();
                entry.0 += usize::from(same);
                entry.1 += 1;
            }
        }
        tally
            .into_iter()
            .map(|(f, (s, n))| (f.to_string(), s, n))
            .collect()
    }

    /// Difference classes (first differing check of each CIB), most frequent first, with seeds.
    pub fn classes(&self) -> Vec<(String, Vec<u64>)> {
        let mut by_class: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (r, checks) in self.compared() {
            if let Some((check, Some(reason))) = checks.iter().find(|(_, v)| v.is_some()) {
                by_class
                    .entry(class(*check, reason))
                    .or_default()
                    .push(r.seed);
            }
        }
        let mut classes: Vec<(String, Vec<u64>)> = by_class.into_iter().collect();
        classes.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        classes
    }

    /// The report as text: rates per check, per feature (worst first), the top classes.
    pub fn render(&self, top: usize) -> String {
        let mut out = String::new();
        let pct = |s: usize, n: usize| {
            if n == 0 {
                100.0
            } else {
                100.0 * s as f64 / n as f64
            }
        };
        let _ = writeln!(
            out,
            "seeds: {}, compared: {}, invalid: {}",
            self.results.len(),
            self.compared_count(),
            self.invalid().len()
        );
        for (seed, e) in self.invalid().iter().take(5) {
            let _ = writeln!(
                out,
                "  invalid seed {seed}: {}",
                e.lines().next().unwrap_or_default()
            );
        }
        let _ = writeln!(out, "identical per check:");
        for (name, s, n) in self.check_rates() {
            let _ = writeln!(out, "  {name:<8} {s}/{n} ({:.1}%)", pct(s, n));
        }
        let mut features = self.feature_rates();
        features.sort_by(|a, b| pct(a.1, a.2).total_cmp(&pct(b.1, b.2)).then(a.0.cmp(&b.0)));
        let _ = writeln!(out, "identical on all checks, per feature (worst first):");
        for (f, s, n) in features {
            let _ = writeln!(out, "  {:>6.1}% {s:>5}/{n:<5} {f}", pct(s, n));
        }
        let _ = writeln!(out, "difference classes (most frequent first):");
        for (c, seeds) in self.classes().iter().take(top) {
            let shown: Vec<String> = seeds.iter().take(5).map(u64::to_string).collect();
            let _ = writeln!(
                out,
                "  {:>4} x {c}\n         seeds {}",
                seeds.len(),
                shown.join(" ")
            );
        }
        out
    }
}
