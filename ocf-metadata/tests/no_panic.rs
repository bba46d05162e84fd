//! Property tests: any environment and any parameter values give a value or a named error, never a
//! panic, and parsing is deterministic.

use std::collections::BTreeMap;

use ocf_metadata::{
    Action, ActionSpec, AgentSpec, EnvError, OcfEnv, ParamError, ParamType, ParameterSpec,
};
use proptest::prelude::*;

static PARAMS: [ParameterSpec; 4] = [
    ParameterSpec::new("config", "c", "c").required(),
    ParameterSpec::new("flag", "f", "f")
        .kind(ParamType::Boolean)
        .default("false"),
    ParameterSpec::new("n", "n", "n")
        .kind(ParamType::Integer)
        .default("0"),
    ParameterSpec::new("secret", "s", "s")
        .kind(ParamType::Integer)
        .private(),
];
static ACTIONS: [ActionSpec; 1] = [ActionSpec::new(Action::Start, 20)];
const SPEC: AgentSpec = AgentSpec {
    name: "T",
    version: "1",
    shortdesc: "t",
    longdesc: "t",
    parameters: &PARAMS,
    actions: &ACTIONS,
    special: None,
};

fn var_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("OCF_RESKEY_CRM_meta_timeout".to_owned()),
        Just("OCF_RESKEY_CRM_meta_interval".to_owned()),
        Just("OCF_RESKEY_CRM_meta_record_pending".to_owned()),
        Just("OCF_CHECK_LEVEL".to_owned()),
        Just("OCF_RA_VERSION_MAJOR".to_owned()),
        Just("OCF_RESKEY_config".to_owned()),
        Just("OCF_RESKEY_".to_owned()),
        "OCF_RESKEY_[a-z_]{0,12}",
        "OCF_RESKEY_CRM_meta_[a-z_]{0,12}",
        ".{0,20}",
    ]
}

proptest! {
    #[test]
    fn any_environment_parses_or_names_the_variable(
        pairs in proptest::collection::vec((var_name(), ".{0,30}"), 0..12)
    ) {
        match OcfEnv::from_pairs(pairs.clone()) {
            Ok(env) => prop_assert_eq!(Ok(env), OcfEnv::from_pairs(pairs)),
            Err(EnvError::NotANumber { name, .. }) | Err(EnvError::NotABoolean { name, .. }) => {
                prop_assert!(pairs.iter().any(|(k, _)| *k == name), "{} not in input", name);
            }
            Err(e) => prop_assert!(false, "unexpected {:?}", e),
        }
    }

    #[test]
    fn any_parameter_values_resolve_or_name_the_parameter(
        values in proptest::collection::btree_map("[a-z]{1,6}|config|flag|n|secret", ".{0,20}", 0..6)
    ) {
        let given: BTreeMap<String, String> = values;
        match SPEC.resolve(&given) {
            Ok(r) => {
                if let Some(v) = given.get("n").filter(|v| !v.is_empty()) {
                    prop_assert_eq!(r.integer("n"), v.trim().parse::<i64>().ok());
                }
            }
            Err(errors) => {
                prop_assert!(!errors.is_empty());
                for e in errors {
                    match e {
                        ParamError::Missing { name } => prop_assert_eq!(name, "config"),
                        ParamError::BadValue { name, value, .. } => {
                            prop_assert!(SPEC.parameter(&name).is_some());
                            if name == "secret" {
                                prop_assert_eq!(value, "<private>", "private values never echoed");
                            }
                        }
                    }
                }
            }
        }
    }
}
