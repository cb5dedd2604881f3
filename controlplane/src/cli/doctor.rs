//! `bootlane doctor`: runs the boot doctor of the running server (`POST /api/v1/doctor`)
//! and prints its findings, most severe first, each with its fix. Exit status: 0 when no
//! finding is an error, 1 when one is (or the server cannot be asked), so a script or a
//! monitoring check can call it.

use std::process::ExitCode;

use serde_json::Value;

/// Arguments of `bootlane doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Configuration file to take `[api] listen` from.
    #[arg(long, env = "BOOTLANE_CONFIG")]
    pub config: Option<std::path::PathBuf>,
    /// Reaching the running server: an operator or an admin, or their API token.
    #[command(flatten)]
    pub login: super::ApiLogin,
    /// Print the report as the API answers it (JSON) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `bootlane doctor`.
pub fn command(args: &DoctorArgs) -> ExitCode {
    let run = async {
        let (_, s) = args
            .login
            .open(args.config.as_deref(), std::time::Duration::from_secs(60))
            .await?;
        let r = s.data("POST", "/api/v1/doctor", None).await;
        s.logout().await;
        r
    };
    let report = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(run));
    match report {
        Ok(r) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
            } else {
                print!("{}", render(&r));
            }
            let errors = r["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|f| f["severity"] == "error");
            if errors {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("bootlane: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The report as text: a header, then one block per finding (severity, check,
/// interface, summary, fix).
pub fn render(r: &Value) -> String {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let findings = r["findings"].as_array().cloned().unwrap_or_default();
    let count = |sev: &str| findings.iter().filter(|f| f["severity"] == sev).count();
    let ifaces: Vec<String> = r["interfaces"].as_array().into_iter().flatten().map(s).collect();
    let mut out = format!(
        "boot doctor: {} error(s), {} warning(s), {} note(s), {} ok on {} in {} ms\n",
        count("error"),
        count("warning"),
        count("info"),
        count("ok"),
        if ifaces.is_empty() {
            "no interface".to_owned()
        } else {
            ifaces.join(", ")
        },
        r["duration_ms"]
    );
    for f in &findings {
        let at = f["interface"].as_str().map(|i| format!(" [{i}]")).unwrap_or_default();
        out.push_str(&format!(
            "\n{:<7} {}{at}: {}\n",
            s(&f["severity"]).to_uppercase(),
            s(&f["check"]),
            s(&f["summary"])
        ));
        if let Some(fix) = f["fix"].as_str() {
            out.push_str(&format!("        fix: {fix}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_each_finding_with_its_fix() {
        let r = serde_json::json!({
            "duration_ms": 4800, "interfaces": ["eth1"],
            "findings": [
                {"check": "rival_dhcp", "severity": "error", "interface": "eth1", "summary": "another DHCP server, 10.0.0.5, answers", "fix": "turn off network boot on 10.0.0.5"},
                {"check": "boot_file", "severity": "ok", "interface": null, "summary": "3 arch map entries point at an existing boot file", "fix": null}
            ]
        });
        let t = render(&r);
        assert!(
            t.starts_with("boot doctor: 1 error(s), 0 warning(s), 0 note(s), 1 ok on eth1 in 4800 ms"),
            "{t}"
        );
        assert!(t.contains("ERROR   rival_dhcp [eth1]: another DHCP server"), "{t}");
        assert!(t.contains("fix: turn off network boot on 10.0.0.5"), "{t}");
        assert!(t.contains("OK      boot_file: 3 arch map"), "{t}");
    }
}
