//! The verdict of a boot session from its steps ([`judge`]): a pure function, so the same
//! steps always give the same words. Problems (a refusal, a missing file, a failed
//! transfer, another server's offer taken) decide at once, unless a later step went
//! well; otherwise the furthest stage reached decides, and an ended session that stopped
//! short of the installer or the local disk is `stalled` at that stage.

use std::net::Ipv4Addr;

use serde_json::Value;

use crate::model::{BootStep, StepDetails, Verdict};

/// What a session has reached, read from its steps.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Progress {
    /// The last problem not followed by a step that went well.
    pub problem: Option<String>,
    /// The last address Bootlane offered.
    pub offered: Option<Ipv4Addr>,
    /// The last address Bootlane acknowledged.
    pub acked: Option<Ipv4Addr>,
    /// The last boot file sent over TFTP.
    pub nbp: Option<String>,
    /// The last script or menu served (`iPXE script` or `GRUB menu` ...).
    pub script: Option<String>,
    /// The script's choice was the local disk.
    pub local: bool,
    /// The kernel sent.
    pub kernel: Option<String>,
    /// The initrd sent.
    pub initrd: Option<String>,
    /// An install task is behind this boot (its script, its answer file or a report).
    pub install_task: bool,
    /// The installer fetched its answer file.
    pub answer: bool,
    /// The installer's final report: `done`/`booted` or `failed` with its message.
    pub report: Option<(String, String)>,
    /// Any step other than DHCP, power and wake-on-LAN.
    pub past_dhcp: bool,
}

fn s<'a>(d: &'a StepDetails, k: &str) -> Option<&'a str> {
    d.str(k)
}

/// Reads the steps in order.
pub fn progress(steps: &[BootStep]) -> Progress {
    let mut p = Progress::default();
    for st in steps {
        let d = &st.details;
        if !matches!(&*st.kind, "dhcp" | "proxydhcp" | "dhcp6" | "wol" | "bmc") {
            p.past_dhcp = true;
        }
        if matches!(&*st.kind, "tftp" | "http" | "installer") {
            // A file fetched after the script: the menu's choice was not the local disk.
            p.local = false;
        }
        match &*st.kind {
            "dhcp" | "proxydhcp" => {
                let Some(d) = d.dhcp() else { continue };
                if let Some(r) = d.rival {
                    p.problem = Some(format!("took another server's offer: {r} answered first"));
                } else if d.reply.as_deref() == Some("offer") {
                    p.offered = d.yiaddr.or(p.offered);
                } else if d.reply.as_deref() == Some("ack") {
                    p.acked = d.yiaddr.or(p.acked);
                    if p.problem.as_deref().is_some_and(|x| x.starts_with("took another")) {
                        p.problem = None;
                    }
                }
            }
            "tftp" => {
                let file = s(d, "file").unwrap_or_default();
                match s(d, "outcome") {
                    Some("Complete") => {
                        p.problem = None;
                        match s(d, "role") {
                            Some("kernel") => p.kernel = Some(file.to_owned()),
                            Some("initrd") => p.initrd = Some(file.to_owned()),
                            _ => p.nbp = Some(file.to_owned()),
                        }
                    }
                    Some("refused") if d.get("code").and_then(Value::as_u64) == Some(1) => {
                        p.problem = Some(format!("asked for {file:?} over TFTP: not found in the boot root"));
                    }
                    Some("refused") => {
                        p.problem = Some(format!("TFTP refused {file:?}: {}", s(d, "error").unwrap_or_default()));
                    }
                    Some(o) => p.problem = Some(format!("TFTP transfer of {file:?} did not complete ({o})")),
                    None => {}
                }
            }
            "http" => {
                let file = s(d, "file").unwrap_or_default();
                if st.ok {
                    p.problem = None;
                    match s(d, "role") {
                        Some("kernel") => p.kernel = Some(file.to_owned()),
                        Some("initrd") => p.initrd = Some(file.to_owned()),
                        _ => {}
                    }
                } else {
                    p.problem = Some(format!("asked for {file:?} over HTTP: not found"));
                }
            }
            "ipxe" | "menu" => {
                p.problem = None;
                p.script = Some(if st.kind == "ipxe" {
                    "iPXE script".into()
                } else {
                    format!("{} menu", s(d, "loader").unwrap_or_default())
                });
                p.local = d.get("local").and_then(Value::as_bool).unwrap_or(false);
                p.install_task |= d.get("install_task").and_then(Value::as_bool).unwrap_or(false);
            }
            "access" => p.problem = Some(st.summary.clone()),
            "installer" => {
                p.install_task = true;
                if s(d, "state") == Some("installing") {
                    p.answer = true;
                }
                match (s(d, "report"), s(d, "state")) {
                    (Some(k @ ("done" | "booted" | "failed")), _) => {
                        p.report = Some((k.to_string(), s(d, "message").unwrap_or_default().to_owned()));
                    }
                    (_, Some("failed")) => {
                        p.report = Some(("failed".into(), s(d, "reason").unwrap_or_default().to_owned()));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    p
}

/// The verdict and its words for `steps`; `ended` when no more steps will come, with
/// `quiet_min` the minutes of silence that ended it (for the words).
pub fn judge(steps: &[BootStep], ended: bool, quiet_min: u64) -> (Verdict, String) {
    judge_progress(&progress(steps), ended, quiet_min)
}

/// [`judge`] of what [`progress`] read.
pub fn judge_progress(p: &Progress, ended: bool, quiet_min: u64) -> (Verdict, String) {
    match &p.report {
        Some((k, _)) if k == "done" => {
            return (
                Verdict::Installed,
                "the installer reported the installation done".into(),
            )
        }
        Some((k, _)) if k == "booted" => return (Verdict::Installed, "installed; the installed system booted".into()),
        Some((_, m)) => return (Verdict::Stalled, format!("the installer reported a failure: {m:?}")),
        None => {}
    }
    if let Some(problem) = &p.problem {
        return (Verdict::Stalled, problem.clone());
    }
    if p.answer {
        return if ended {
            (
                Verdict::Stalled,
                format!("kernel and initrd sent, answer file fetched, no installer report in {quiet_min} min"),
            )
        } else {
            (
                Verdict::HandedToInstaller,
                "the installer fetched its answer file and runs".into(),
            )
        };
    }
    if p.local {
        return (
            Verdict::BootedLocalDisk,
            format!(
                "{}'s default entry is the local disk",
                p.script.as_deref().unwrap_or_default()
            ),
        );
    }
    if let (Some(k), Some(i)) = (&p.kernel, &p.initrd) {
        return match (ended, p.install_task) {
            (true, true) => (
                Verdict::Stalled,
                format!("kernel and initrd sent, no installer report in {quiet_min} min"),
            ),
            _ => (
                Verdict::HandedToInstaller,
                format!("kernel {k:?} and initrd {i:?} sent"),
            ),
        };
    }
    // Ended: "X, the kernel was never requested"; open: "X; waiting: the kernel ...".
    let (sep, verdict) = if ended {
        (", ", Verdict::Stalled)
    } else {
        ("; waiting: ", Verdict::InProgress)
    };
    let stage = if let Some(k) = &p.kernel {
        format!("kernel {k:?} sent{sep}the initrd was never requested")
    } else if let Some(sc) = &p.script {
        format!("{sc} served{sep}the kernel was never requested")
    } else if let Some(n) = &p.nbp {
        format!("{n:?} sent over TFTP{sep}nothing was asked after it")
    } else if let Some(a) = &p.acked {
        format!("address {a} acknowledged{sep}no boot file was requested")
    } else if let Some(o) = &p.offered {
        format!("offered {o}{sep}the client never requested it")
    } else {
        "no answer was given".to_string()
    };
    (verdict, stage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn st(kind: &'static str, ok: bool, d: Value) -> BootStep {
        BootStep {
            at: time::OffsetDateTime::UNIX_EPOCH,
            offset_ms: 0,
            duration_ms: None,
            kind: kind.into(),
            ok,
            summary: String::new(),
            details: d.into(),
        }
    }

    /// A DHCP step with Bootlane's `reply` giving `yiaddr`, or with another server's
    /// offer taken (`rival`).
    fn dhcp(reply: Option<&'static str>, yiaddr: Option<&str>, rival: Option<&str>) -> BootStep {
        let d = crate::model::DhcpDetails {
            message: if reply == Some("ack") || rival.is_some() {
                "request"
            } else {
                "discover"
            }
            .into(),
            port: 67,
            client: "0.0.0.0:68".parse().unwrap(),
            ipxe: false,
            arch: None,
            vendor_class: None,
            server_id: rival.map(|r| r.parse().unwrap()),
            giaddr: None,
            reply: reply.map(Into::into),
            server: None,
            yiaddr: yiaddr.map(|a| a.parse().unwrap()),
            next_server: None,
            boot_file: None,
            rival: rival.map(|r| r.parse().unwrap()),
        };
        BootStep {
            details: StepDetails::Dhcp(d),
            ..st("dhcp", rival.is_none(), Value::Null)
        }
    }

    #[test]
    fn verdicts_name_the_stage_and_the_cause() {
        let offer = dhcp(Some("offer"), Some("10.0.0.50"), None);
        let rival = dhcp(None, None, Some("10.0.0.5"));
        assert_eq!(
            judge(std::slice::from_ref(&offer), true, 15).1,
            "offered 10.0.0.50, the client never requested it"
        );
        assert_eq!(
            judge(&[offer.clone(), rival.clone()], false, 15),
            (
                Verdict::Stalled,
                "took another server's offer: 10.0.0.5 answered first".into()
            )
        );
        let missing = st(
            "tftp",
            false,
            json!({"file": "ipxe.efi", "outcome": "refused", "code": 1}),
        );
        assert_eq!(
            judge(&[offer.clone(), missing], false, 15).1,
            "asked for \"ipxe.efi\" over TFTP: not found in the boot root"
        );
        let nbp = st("tftp", true, json!({"file": "undionly.kpxe", "outcome": "Complete"}));
        let script = st("ipxe", true, json!({"profile": "debian"}));
        assert_eq!(
            judge(&[nbp.clone(), script.clone()], true, 15),
            (
                Verdict::Stalled,
                "iPXE script served, the kernel was never requested".into()
            )
        );
        assert_eq!(judge(&[nbp.clone(), script.clone()], false, 15).0, Verdict::InProgress);
        let k404 = st("http", false, json!({"file": "debian/linux", "status": 404}));
        assert_eq!(
            judge(&[script.clone(), k404], false, 15).1,
            "asked for \"debian/linux\" over HTTP: not found"
        );
        let kernel = st("http", true, json!({"file": "debian/linux", "role": "kernel"}));
        let initrd = st("http", true, json!({"file": "debian/initrd.gz", "role": "initrd"}));
        let all = [nbp.clone(), script.clone(), kernel.clone(), initrd.clone()];
        assert_eq!(judge(&all, true, 15).0, Verdict::HandedToInstaller);
        let task = st("ipxe", true, json!({"install_task": true}));
        assert_eq!(
            judge(&[task.clone(), kernel.clone(), initrd.clone()], true, 15).1,
            "kernel and initrd sent, no installer report in 15 min"
        );
        let answer = st("installer", true, json!({"state": "installing"}));
        let done = st("installer", true, json!({"report": "done", "message": ""}));
        assert_eq!(
            judge(
                &[task.clone(), kernel.clone(), initrd.clone(), answer.clone()],
                false,
                15
            )
            .0,
            Verdict::HandedToInstaller
        );
        assert_eq!(
            judge(&[task, kernel, initrd, answer, done], false, 15).0,
            Verdict::Installed
        );
        let local = st("ipxe", true, json!({"profile": "disk", "local": true}));
        assert_eq!(judge(&[nbp, local], true, 15).0, Verdict::BootedLocalDisk);
        // Another server's offer, then Bootlane's ACK after all: not stalled.
        let ack = dhcp(Some("ack"), Some("10.0.0.50"), None);
        assert_eq!(judge(&[offer, rival, ack], false, 15).0, Verdict::InProgress);
    }
}
