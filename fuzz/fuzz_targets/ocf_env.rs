//! Fuzz target: the OCF environment (`OcfEnv::from_pairs`/`from_os_pairs`), VirtualDomain
//! parameter resolution and the agent's validation (`Config::validate`, `migrate_options`, remote
//! and migration URIs, which must come out of `urisafe`'s checks whole). Input: lines `NAME=VALUE`; a name without an `OCF_`/`HA_` prefix gets
//! `OCF_RESKEY_`, so the fuzzer reaches parameters quickly.
#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use highlander_agent::config::{Config, RawConfig};
use highlander_agent::params::VIRTUAL_DOMAIN;
use highlander_agent::{migration, urisafe};
use libfuzzer_sys::fuzz_target;
use ocf_metadata::{Action, OcfEnv};

const ACTIONS: [Action; 7] = [
    Action::Start,
    Action::Stop,
    Action::Monitor,
    Action::ValidateAll,
    Action::MigrateTo,
    Action::MigrateFrom,
    Action::ReloadAgent,
];

fn pairs(data: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    data.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|line| {
            let (k, v) = match line.iter().position(|b| *b == b'=') {
                Some(i) => (&line[..i], &line[i + 1..]),
                None => (line, &b""[..]),
            };
            let k = if k.starts_with(b"OCF_") || k.starts_with(b"HA_") {
                k.to_vec()
            } else {
                [b"OCF_RESKEY_".as_slice(), k].concat()
            };
            (k, v.to_vec())
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let raw_pairs = pairs(data);
    // Raw bytes: non-UTF-8 OCF variables must be an error naming the variable.
    let os: Vec<(OsString, OsString)> = raw_pairs
        .iter()
        .map(|(k, v)| (OsString::from_vec(k.clone()), OsString::from_vec(v.clone())))
        .collect();
    let from_os = OcfEnv::from_os_pairs(os);
    let utf8: Vec<(String, String)> = raw_pairs
        .iter()
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect();
    let env = match OcfEnv::from_pairs(utf8) {
        Ok(env) => env,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    if let Ok(e2) = from_os {
        // Same input, valid UTF-8 throughout: both readers agree.
        if raw_pairs
            .iter()
            .all(|(k, v)| std::str::from_utf8(k).is_ok() && std::str::from_utf8(v).is_ok())
        {
            assert_eq!(e2, env);
        }
    }
    match VIRTUAL_DOMAIN.resolve(&env.params) {
        Ok(r) => {
            for p in VIRTUAL_DOMAIN.parameters {
                if let Some(v) = r.get(p.name) {
                    assert!(p.check(v).is_ok() || !r.is_explicit(p.name) || v.is_empty());
                }
            }
        }
        Err(errors) => {
            assert!(!errors.is_empty());
            for e in &errors {
                let text = e.to_string();
                assert!(!text.is_empty());
                // Private parameters never show their value (none are private today; the check
                // keeps that promise when one becomes so).
                for p in VIRTUAL_DOMAIN.parameters.iter().filter(|p| p.private) {
                    if let Some(v) = env.params.get(p.name).filter(|v| v.len() > 3) {
                        assert!(!text.contains(v.as_str()), "private {} leaked", p.name);
                    }
                }
            }
        }
    }
    for action in ACTIONS {
        let raw = RawConfig::from_env(&env, action);
        assert!(raw.budget_ms <= raw.timeout_ms);
        match Config::validate(raw) {
            Ok(cfg) => {
                let target = env.meta.migrate_target.as_deref().unwrap_or("node2");
                // An accepted request is made only of safe parts (no value smuggled a user,
                // host, path, query, fragment or transport into a URI).
                if let Ok(req) = migration::request(
                    &cfg.migration,
                    cfg.hypervisor_uri.as_deref(),
                    &cfg.raw.instance,
                    target,
                ) {
                    assert!(urisafe::check_node_name(target).is_ok(), "{target:?}");
                    assert!(!req.target_uri.contains("%n"));
                    assert_eq!(urisafe::check_local_uri(&req.target_uri), Ok(()));
                    if let Some(m) = &req.migrate_uri {
                        assert_eq!(urisafe::check_migrate_uri_template(m), Ok(()), "{m}");
                    }
                }
                let _ = migration::remote_uri(&cfg.migration, cfg.hypervisor_uri.as_deref(), target);
                // monitor_scripts are split into words, never handed to a shell.
                assert!(cfg.monitor_scripts.iter().all(|w| !w.chars().any(char::is_whitespace)));
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                let _ = e.code();
            }
        }
    }
});
