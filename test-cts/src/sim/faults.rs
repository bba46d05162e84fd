//! Fault injection: every `fault_gap` the seed picks one fault kind by this run's weights and a
//! victim, applies it to the world or the CIB, and schedules its end when it has one. Faults that
//! take a node away never take the cluster below quorum (see the report for why).

use highlander_agent::hypervisor::Op;
use highlander_agent::mem::{Daemon, Fault};

use super::cluster::{Ev, Heal, Sim};
use super::executor::OpKind;
use super::options::FaultKind;
use super::record::{self, Member};

const HV_OPS: [Op; 6] = [
    Op::State,
    Op::Create,
    Op::Shutdown,
    Op::Destroy,
    Op::Migrate,
    Op::JobInfo,
];

impl Sim {
    fn impaired(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| {
                !n.powered
                    || n.member != Member::Up
                    || n.shutting_down
                    || self.world.is_isolated(&n.name)
            })
            .count()
    }

    /// Whether one more node may leave without losing quorum.
    fn may_take_node(&self) -> bool {
        (self.impaired() + 1) * 2 < self.nodes.len()
    }

    fn healthy_nodes(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| {
                let n = &self.nodes[i];
                n.powered
                    && n.member == Member::Up
                    && !n.shutting_down
                    && !self.world.is_isolated(&n.name)
            })
            .collect()
    }

    fn pick_kind(&mut self) -> Option<FaultKind> {
        let total: u64 = self.opts.weights.iter().map(|(_, w)| w).sum();
        if total == 0 {
            return None;
        }
        let mut x = self.rng.range(0, total - 1);
        for &(k, w) in &self.opts.weights {
            if x < w {
                return Some(k);
            }
            x -= w;
        }
        None
    }

    /// One fault now, and the next one scheduled.
    pub fn fault(&mut self) {
        if self.phase != super::cluster::Phase::Safety {
            return;
        }
        if let Some(kind) = self.pick_kind() {
            self.apply(kind);
            self.stats.faults += 1;
        }
        self.faults_done += 1;
        let gap = self.fault_gap();
        if self.faults_done >= self.opts.faults_max {
            self.after(gap, Ev::Liveness);
        } else {
            self.after(gap, Ev::Fault);
        }
    }

    fn apply(&mut self, kind: FaultKind) {
        let healthy = self.healthy_nodes();
        if healthy.is_empty() {
            return;
        }
        let ni = healthy[self.rng.index(healthy.len())];
        let name = self.nodes[ni].name.clone();
        match kind {
            FaultKind::ActionFails => {
                let op = HV_OPS[self.rng.index(HV_OPS.len())];
                self.world
                    .inject(&name, op, Fault::Error("injected failure".into()));
                self.note("FAULT", format!("next {op} on {name} fails"));
            }
            FaultKind::ActionHangs => {
                let op = HV_OPS[self.rng.index(HV_OPS.len())];
                let f = if self.rng.chance(500) {
                    Fault::Hang
                } else {
                    Fault::HangAfterEffect
                };
                self.note("FAULT", format!("next {op} on {name} hangs ({f:?})"));
                self.world.inject(&name, op, f);
            }
            FaultKind::AgentKilled => self.kill_an_agent(),
            FaultKind::DaemonDown | FaultKind::DaemonHung => {
                let d = if kind == FaultKind::DaemonDown {
                    Daemon::Down
                } else {
                    Daemon::Hung
                };
                let ms = self.rng.range(2_000, 90_000);
                self.world.set_daemon(&name, d);
                self.note("FAULT", format!("libvirtd on {name} {d:?} for {ms}ms"));
                self.after(ms, Ev::Heal(Heal::Daemon(ni)));
            }
            FaultKind::NodeCrash => {
                if !self.may_take_node() {
                    return;
                }
                let killed = self.power_off(ni);
                let detect = self.opts.detect_ms;
                let lost = if killed.is_empty() {
                    String::new()
                } else {
                    format!(" (destroyed: {})", killed.join(","))
                };
                self.note("FAULT", format!("{name} crashes{lost}"));
                self.after(detect, Ev::Detect { node: ni });
            }
            FaultKind::NodeShutdown => {
                if !self.may_take_node() {
                    return;
                }
                self.nodes[ni].shutting_down = true;
                let now_s = record::now_s(self.now_ms());
                self.nodes[ni]
                    .hist
                    .attrs
                    .insert("shutdown".into(), now_s.to_string());
                let hist = self.nodes[ni].hist.clone();
                hist.publish(&mut self.cib, &name);
                self.note("ADMIN", format!("{name} asked to shut down"));
                self.cib_changed("shutdown request");
            }
            FaultKind::ConstraintFlip => self.constraint_flip(),
            FaultKind::Isolation => {
                if !self.may_take_node() {
                    return;
                }
                self.world.isolate(&name);
                let detect = self.opts.detect_ms;
                if self.rng.chance(300) {
                    let blip = self.rng.range(100, detect.saturating_sub(100).max(100));
                    self.note("FAULT", format!("{name} isolated for {blip}ms"));
                    self.after(blip, Ev::Heal(Heal::Reconnect(ni)));
                } else {
                    self.note("FAULT", format!("{name} isolated"));
                }
                self.after(detect, Ev::Detect { node: ni });
            }
            FaultKind::GuestCrash => {
                let running: Vec<String> = self
                    .vms
                    .iter()
                    .filter(|vm| self.world.running_on(vm).len() == 1)
                    .cloned()
                    .collect();
                if running.is_empty() {
                    return;
                }
                let vm = running[self.rng.index(running.len())].clone();
                let on = self.world.running_on(&vm);
                if let Some(n) = on.first() {
                    if self.world.crash_guest(n, &vm) {
                        self.note("FAULT", format!("guest {vm} crashes on {n}"));
                    }
                }
            }
            FaultKind::Evacuate => {
                let standby = self.nodes.iter().filter(|n| n.standby).count();
                if standby + 2 >= self.nodes.len() {
                    return;
                }
                self.nodes[ni].standby = true;
                record::set_node_attr(&mut self.cib, &name, "standby", Some("on"));
                let ms = self.rng.range(5_000, 120_000);
                self.note("ADMIN", format!("evacuate {name} (standby on) for {ms}ms"));
                self.after(ms, Ev::Heal(Heal::Standby(ni)));
                self.cib_changed("configuration change");
            }
        }
    }

    /// The agent process of a running action dies (SIGKILL), migrate_to above all.
    fn kill_an_agent(&mut self) {
        let mut ids: Vec<(u64, u64)> = self
            .tasks
            .iter()
            .filter(|(_, t)| self.nodes[t.node].powered)
            .map(|(&id, t)| {
                (
                    id,
                    if matches!(t.op, OpKind::MigrateTo { .. }) {
                        6
                    } else {
                        1
                    },
                )
            })
            .collect();
        if ids.is_empty() {
            // Nothing runs now: kill the next migrate_to shortly after it starts instead.
            return;
        }
        ids.sort();
        let total: u64 = ids.iter().map(|(_, w)| w).sum();
        let mut x = self.rng.range(0, total - 1);
        let mut pick = ids[0].0;
        for (id, w) in ids {
            if x < w {
                pick = id;
                break;
            }
            x -= w;
        }
        if let Some(t) = self.tasks.get(&pick) {
            let what = format!("{} {} on {}", t.rsc, t.op.task(), self.nodes[t.node].name);
            self.note("FAULT", format!("agent killed: {what}"));
        }
        let st = self.kernel.kill(pick);
        self.after_resume(pick, st);
    }

    /// The 2013 case: a constraint moves a running VM away, and is removed again soon, often
    /// while the migration runs.
    fn constraint_flip(&mut self) {
        let running: Vec<(String, String)> = self
            .vms
            .iter()
            .filter_map(|vm| {
                let on = self.world.running_on(vm);
                (on.len() == 1).then(|| (vm.clone(), on[0].clone()))
            })
            .collect();
        if running.is_empty() {
            return;
        }
        let (vm, source) = running[self.rng.index(running.len())].clone();
        let targets: Vec<usize> = self
            .healthy_nodes()
            .into_iter()
            .filter(|&i| self.nodes[i].name != source && !self.nodes[i].standby)
            .collect();
        if targets.is_empty() {
            return;
        }
        let t = targets[self.rng.index(targets.len())];
        let target = self.nodes[t].name.clone();
        let id = format!("cli-prefer-{vm}");
        record::add_location(&mut self.cib, &id, &vm, &target, "INFINITY");
        let m = self.opts.migration_ms;
        if self.rng.chance(500) {
            let delay = self.rng.range(0, m + m / 2);
            self.note("ADMIN", format!("constraint {id} ({vm} -> {target}) added; removed {delay}ms after its migrate_to starts"));
            self.remove_on_migrate = Some((vm, id.clone(), delay));
            let fallback = self.rng.range(m, 4 * m + 30_000);
            self.after(fallback, Ev::Heal(Heal::Constraint(id)));
        } else {
            let delay = self.rng.range(0, 2 * m + 2_000);
            self.note(
                "ADMIN",
                format!("constraint {id} ({vm} -> {target}) added for {delay}ms"),
            );
            self.after(delay, Ev::Heal(Heal::Constraint(id)));
        }
        self.cib_changed("configuration change");
    }
}
