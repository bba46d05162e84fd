//! crm_simulate's flags that `pengine simulate` takes but refuses: each would print something
//! other than crm_simulate prints, so it is named in an error instead (exit status 1).

/// The refused flags, parsed only to be named in the error.
#[derive(clap::Args)]
pub struct RefusedFlags {
    /// Refused: the "Node Attributes" section is not printed.
    #[arg(short = 'A', long = "show-attrs")]
    show_attrs: bool,
    /// Refused: the "Migration Summary" and "Failed Resource Actions" sections are not printed.
    #[arg(short = 'c', long = "show-failcounts")]
    show_failcounts: bool,
    /// Refused: utilization information (and crm_simulate's plain layout with it) is not printed.
    #[arg(short = 'U', long = "show-utilization")]
    show_utilization: bool,
    /// Refused: the DOT file holds the transition's actions only.
    #[arg(short = 'a', long = "all-actions")]
    all_actions: bool,
    /// Refused: an active watchdog device is not simulated.
    #[arg(short = 'w', long = "watchdog", value_name = "DEVICE")]
    watchdog: Option<String>,
    /// Refused: there is no debug log.
    #[arg(short = 'V', long = "verbose", action = clap::ArgAction::Count)]
    verbose: u8,
}

impl RefusedFlags {
    /// The first refused flag given, as an error naming it and saying why.
    pub fn check(&self) -> Result<(), String> {
        let refused = [
            (
                self.show_attrs,
                "-A/--show-attrs",
                "the node attributes section is not implemented",
            ),
            (
                self.show_failcounts,
                "-c/--show-failcounts",
                "the migration summary and failed resource actions sections are not implemented",
            ),
            (
                self.show_utilization,
                "-U/--show-utilization",
                "utilization information and crm_simulate's plain text layout that comes with it \
                 are not implemented",
            ),
            (
                self.all_actions,
                "-a/--all-actions",
                "the DOT file can only hold the transition's actions (optional actions are not kept)",
            ),
            (
                self.watchdog.is_some(),
                "-w/--watchdog",
                "injecting an active watchdog device (have-watchdog) is not implemented",
            ),
            (
                self.verbose > 0,
                "-V/--verbose",
                "pengine writes no debug log, and crm_simulate -V also changes the DOT file's \
                 action names",
            ),
        ];
        match refused.iter().find(|(given, _, _)| *given) {
            Some((_, flag, why)) => {
                Err(format!("{flag} is refused: {why}; run crm_simulate for it"))
            }
            None => Ok(()),
        }
    }
}
