//! The planner the controller asks: pengine as merged, or the control, a planner with Pacemaker
//! 1.0's model of migration. In 1.0 a finished migrate_to meant "stopped on the source" and the VM
//! was thought to run nowhere until migrate_from; there was no pending record for migrate_to. The
//! control rewrites the status that way before asking pengine, so the checkers must catch it on
//! the 2013 scenario.

use pengine::Cib;
use pengine::unstable::Transition;

use super::options::PlannerKind;

/// One scheduler run.
pub fn plan(kind: PlannerKind, cib: &Cib, now_s: i64) -> Transition {
    match kind {
        PlannerKind::Pengine => pengine::unstable::schedule(cib, now_s),
        PlannerKind::Pacemaker10 => pengine::unstable::schedule(&view_as_pacemaker_1_0(cib), now_s),
    }
}

/// The status as Pacemaker 1.0 understood it: a successful migrate_to is a stop on the source;
/// a pending migrate_to is not recorded at all.
pub fn view_as_pacemaker_1_0(cib: &Cib) -> Cib {
    let mut view = cib.clone();
    for st in &mut view.status {
        for lrm in &mut st.lrm {
            lrm.ops
                .retain(|o| !(o.operation == "migrate_to" && o.op_status == -1));
            for op in &mut lrm.ops {
                if op.operation == "migrate_to" && op.rc_code == 0 && op.op_status == 0 {
                    op.operation = "stop".into();
                    op.migrate_source = None;
                    op.migrate_target = None;
                }
            }
        }
    }
    view
}
