//! The VirtualDomain parameter and action table: heartbeat's 27 parameters, same names and defaults.
//!
//! This one table renders `meta-data`, drives `validate-all` and generates the README's table.

use ocf_metadata::{Action, ActionSpec, AgentSpec, ParamType, ParameterSpec, Special, SpecialItem};

const B: ParamType = ParamType::Boolean;
const I: ParamType = ParamType::Integer;

/// heartbeat's VirtualDomain parameters, in its order.
pub static PARAMETERS: [ParameterSpec; 27] = [
    ParameterSpec::new(
        "config",
        "Virtual domain configuration file",
        "Absolute path to the libvirt domain XML. The domain name is read from its <name> element \
         with an XML parser.",
    )
    .required()
    .unique(),
    ParameterSpec::new(
        "hypervisor",
        "Hypervisor URI",
        "libvirt connection URI of the local hypervisor. When unset, libvirt's default URI is used \
         (LIBVIRT_DEFAULT_URI, then qemu:///system).",
    ),
    ParameterSpec::new(
        "force_stop",
        "Always force shutdown on stop",
        "Skip the graceful shutdown on stop and destroy the domain at once.",
    )
    .kind(B)
    .default("0")
    .reloadable(),
    ParameterSpec::new(
        "migration_transport",
        "Remote hypervisor transport",
        "Transport added to the remote libvirt URI during live migration (ssh, tcp, tls, ...).",
    )
    .default("")
    .reloadable(),
    ParameterSpec::new(
        "migration_user",
        "Remote username for the remoteuri",
        "User put into the generated remote URI. Ignored when remoteuri is set.",
    )
    .reloadable(),
    ParameterSpec::new(
        "migration_downtime",
        "Live migration downtime",
        "Maximum tolerable downtime in milliseconds during live migration, set through libvirt's \
         migration parameters before the migration starts. 0 leaves libvirt's default.",
    )
    .kind(I)
    .default("0")
    .reloadable(),
    ParameterSpec::new(
        "migration_speed",
        "Live migration speed",
        "Maximum migration bandwidth in MiB/s. 0 leaves libvirt's default.",
    )
    .kind(I)
    .default("0")
    .reloadable(),
    ParameterSpec::new(
        "migration_network_suffix",
        "Migration network host name suffix",
        "Suffix appended to the target's short host name to reach it over a dedicated migration \
         network; used for the remote URI and the generated migration URI.",
    )
    .default("")
    .reloadable(),
    ParameterSpec::new(
        "migrateuri",
        "Custom migrateuri for migration state transfer",
        "Explicit URI for the migration data stream; %n is replaced by the target node name. \
         Overrides migration_network_suffix and migrateport.",
    )
    .reloadable(),
    ParameterSpec::new(
        "migrate_options",
        "live migrate options",
        "Extra virsh-style migration options (such as --p2p --tunnelled --compressed). They are \
         parsed into libvirt flags and parameters, never passed to a shell; unknown options are \
         refused.",
    )
    .reloadable(),
    ParameterSpec::new(
        "monitor_scripts",
        "space-separated list of monitor scripts",
        "Space-separated commands run after the domain is seen running; any non-zero exit makes \
         monitor fail. start and migrate_from wait for them to pass. Run directly, not through a shell.",
    )
    .default("")
    .reloadable(),
    ParameterSpec::new(
        "autoset_utilization_cpu",
        "Enable auto-setting the CPU utilization of the resource",
        "Keep the resource's cpu utilization equal to the domain's vCPU count (the current count \
         in the config XML). Written with crm_resource on start and on a monitor only when the \
         value changed.",
    )
    .kind(B)
    .default("true")
    .reloadable(),
    ParameterSpec::new(
        "autoset_utilization_host_memory",
        "Enable auto-setting the host_memory utilization of the resource",
        "Keep the resource's host_memory utilization equal to the domain's maximum memory in MiB \
         (from the config XML), written as autoset_utilization_cpu is.",
    )
    .kind(B)
    .default("true")
    .reloadable(),
    ParameterSpec::new(
        "autoset_utilization_hv_memory",
        "Enable auto-setting the hv_memory utilization of the resource",
        "Keep the resource's hv_memory utilization equal to the domain's maximum memory in MiB \
         (from the config XML), written as autoset_utilization_cpu is.",
    )
    .kind(B)
    .default("true")
    .reloadable(),
    ParameterSpec::new(
        "unset_utilization_cpu",
        "Enable auto-removing the CPU utilization of the resource",
        "When autoset_utilization_cpu is false, remove the cpu utilization attribute (once per \
         node, not on every monitor).",
    )
    .kind(B)
    .default("false")
    .reloadable(),
    ParameterSpec::new(
        "unset_utilization_host_memory",
        "Enable auto-removing the host_memory utilization of the resource",
        "When autoset_utilization_host_memory is false, remove the host_memory utilization attribute (once \
         per node, not on every monitor).",
    )
    .kind(B)
    .default("false")
    .reloadable(),
    ParameterSpec::new(
        "unset_utilization_hv_memory",
        "Enable auto-removing the hv_memory utilization of the resource",
        "When autoset_utilization_hv_memory is false, remove the hv_memory utilization attribute (once \
         per node, not on every monitor).",
    )
    .kind(B)
    .default("false")
    .reloadable(),
    ParameterSpec::new(
        "migrateport",
        "Port for migrateuri",
        "TCP port of the generated migration URI (tcp:<target><suffix>:<port>, generated only \
         when migration_network_suffix or migrateport is set; otherwise libvirt chooses). When \
         unset, a port in 49152-49215 is derived from the resource name, so parallel migrations of \
         different resources do not collide.",
    )
    .kind(I)
    .reloadable(),
    ParameterSpec::new(
        "remoteuri",
        "Custom remoteuri to communicate with a remote hypervisor",
        "Explicit libvirt URI of the target hypervisor; %n is replaced by the target node name. \
         Overrides migration_transport, migration_user and migration_network_suffix.",
    )
    .reloadable(),
    ParameterSpec::new(
        "save_config_on_stop",
        "Save running VM's config back to its config file",
        "Changes to a running domain's configuration are otherwise lost on stop. When true, the \
         domain's persistent XML (with its secrets, as dumpxml --inactive --security-info) is \
         written back to config whenever it differs from the file: before a graceful stop, before \
         migrate_to, after migrate_from and after a monitor that finds the domain running. The \
         file is replaced atomically (temporary file, fsync, rename); a failure is only logged. \
         Make sure config is the same on every node, or use sync_config_on_stop.",
    )
    .kind(B)
    .default("false")
    .reloadable(),
    ParameterSpec::new(
        "sync_config_on_stop",
        "Save running VM's config back to its config file and sync it",
        "Implies save_config_on_stop; after config was rewritten, runs csync2 -x on it to copy it \
         to the other nodes (csync2 must be set up for that). csync2 is killed at the action's \
         deadline; a failure is only logged.",
    )
    .kind(B)
    .default("false")
    .reloadable(),
    ParameterSpec::new(
        "snapshot",
        "Restore state on start/stop",
        "Absolute path of a directory for the domain's memory state. A graceful stop of a running \
         domain saves its RAM state to <name>.state there (written as <name>.state.partial and \
         renamed once complete), which stops it; the next start restores the domain from that \
         file instead of booting it and removes the file once the restore succeeded. A failed \
         save falls back to a normal shutdown; a failed restore fails the start and keeps the \
         file. A file found while the domain runs, or after it migrated here, is stale and \
         removed. Keep the directory on storage all nodes share. Incompatible with force_stop.",
    )
    .default(""),
    ParameterSpec::new(
        "backingfile",
        "Backing file for a copy-on-write overlay",
        "Absolute path of the image the domain runs on in copy-on-write mode; it never changes. \
         A start creates the qcow2 overlay <dir of config>/<file name of config up to its first \
         dot>.qcow2 on it (qemu-img create with the backing file's format) when that file is \
         missing or empty, or on every start with stateless; the domain XML must use the overlay \
         as its disk. Never while the domain runs here, never on migrate_from: for live \
         migration the overlay must be on storage both nodes share.",
    )
    .default(""),
    ParameterSpec::new(
        "stateless",
        "Re-create the overlay on every start",
        "With backingfile, the overlay is created anew on every start (written beside the old one \
         and renamed over it), so the domain always starts from the backing file. Without \
         backingfile: refused (OCF_ERR_CONFIGURED).",
    )
    .kind(B)
    .default("false"),
    ParameterSpec::new(
        "copyindirs",
        "Directories copied into a stateless guest",
        "Directories copied into the guest with virt-copy-in before its first boot (stateless mode). \
         Not implemented yet: setting it is refused (OCF_ERR_CONFIGURED).",
    )
    .default(""),
    ParameterSpec::new(
        "shutdown_mode",
        "Instruct virsh to use specific shutdown mode",
        "Comma-separated shutdown modes for the graceful stop: acpi, agent, initctl, signal, \
         paravirt. Empty lets libvirt choose.",
    )
    .default("")
    .reloadable(),
    ParameterSpec::new(
        "start_resources",
        "Ensure the needed virtual storage pools and networks are started",
        "Before start (on this node) and before a live migration (on the target), start every \
         storage pool and virtual network the domain XML names (pool='...' and network='...' \
         attributes) that is not running; a running pool is refreshed. One that cannot be started \
         fails the action.",
    )
    .kind(B)
    .default("false")
    .reloadable(),
];

/// The actions advertised in meta-data, with heartbeat's default timeouts.
pub static ACTIONS: [ActionSpec; 9] = [
    ActionSpec::new(Action::Start, 90),
    ActionSpec::new(Action::Stop, 90),
    ActionSpec::new(Action::Status, 30).recurring(10, 0),
    ActionSpec::new(Action::Monitor, 30).recurring(10, 0),
    ActionSpec::new(Action::MigrateFrom, 60),
    ActionSpec::new(Action::MigrateTo, 120),
    ActionSpec::new(Action::MetaData, 5),
    ActionSpec::new(Action::ValidateAll, 5),
    ActionSpec::new(Action::ReloadAgent, 20),
];

/// The whole VirtualDomain description.
pub const VIRTUAL_DOMAIN: AgentSpec = AgentSpec {
    name: "VirtualDomain",
    version: env!("CARGO_PKG_VERSION"),
    shortdesc: "Manages libvirt virtual domains, with atomic live migration",
    longdesc: "Highlander's VirtualDomain manages one libvirt domain as a cluster resource. It is a \
               drop-in for ocf:heartbeat:VirtualDomain (same parameters and defaults). migrate_to \
               performs the whole live migration with a deadline and answers from where the domain \
               really runs. Its migrate_to is atomic and truthful: when it answers, the domain runs \
               on exactly one node, the target on success and the source on failure; the agent \
               itself never restarts the guest to get there. Whether an interrupted migration costs \
               a reboot is the scheduler's choice: Pacemaker's own scheduler (pacemaker-schedulerd) \
               recovers it by stopping the domain wherever it may run and starting it again, a \
               reboot of the guest. Only a scheduler that plans with pengine's atomic migration \
               model (Highlander's pengine, and Highlander's scheduler daemon highlander-schedulerd \
               built on it) finishes or reverses it live instead. pengine plans this agent with \
               migration-model=atomic by default; set the resource meta-attribute \
               migration-model=two-phase for Pacemaker's own model. pacemaker-schedulerd does not \
               read this attribute.",
    parameters: &PARAMETERS,
    actions: &ACTIONS,
    special: Some(MIGRATION_SPECIAL),
};

/// The `<special tag="highlander">` block of the OCF 1.1 meta-data: the same facts as the longdesc,
/// machine-readable. `migration-model` names pengine's meta-attribute and this agent's default.
pub const MIGRATION_SPECIAL: Special = Special {
    tag: "highlander",
    items: &[
        SpecialItem {
            name: "migrate_to",
            attrs: &[("atomic", "1"), ("truthful", "1")],
        },
        SpecialItem {
            name: "migration-model",
            attrs: &[("default", "atomic"), ("meta-attribute", "migration-model")],
        },
    ],
};
