//! IPMI 2.0 over LAN through Debian's `ipmitool`: every call is one
//! `ipmitool -I lanplus -C <suite> -H <host> -p <port> -U <user> -E -v -N <secs> -R 1 ...`
//! run. The password goes through the `IPMI_PASSWORD` environment variable (`-E`), never on
//! the command line (where `ps` shows it); the run is killed when it overruns
//! `Target::timeout`. `ipmitool` has no machine-readable errors, so its stderr (with `-v`,
//! which names the RAKP failure) is read into a [`BmcError`] by [`classify`]; that text is
//! the tool's interface, matched here and only here. Parsers for its answers are pure
//! functions with tests. No state.

use std::{process::Stdio, time::Duration};

use super::{
    client::{BmcError, BootDevice, BootReport, BootRequest, Reset, Target},
    model::{Identity, PowerState},
};

/// Runs `ipmitool <session options> <args>` against `t`; returns stdout.
///
/// # Errors
/// [`classify`] of stderr on failure; [`BmcError::Unreachable`] on timeout;
/// [`BmcError::Tool`] when `ipmitool` cannot be started.
pub async fn run(tool: &str, t: &Target, args: &[&str]) -> Result<String, BmcError> {
    let secs = t.timeout.as_secs().max(1);
    // -N is the per-try timeout and -R the retries: ipmitool waits about N x (R + 1).
    let per_try = (secs / 2).max(1).to_string();
    let suite = t.cipher_suite.to_string();
    let port = t.port.to_string();
    let mut cmd = tokio::process::Command::new(tool);
    cmd.args([
        "-I", "lanplus", "-C", &suite, "-H", &t.host, "-p", &port, "-U", &t.user, "-E", "-v",
    ])
    .args(["-N", &per_try, "-R", "1"])
    .args(args)
    .env("IPMI_PASSWORD", &t.password)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    let child = cmd.spawn().map_err(|e| {
        BmcError::Tool(if e.kind() == std::io::ErrorKind::NotFound {
            format!("{tool} is not installed (Debian package ipmitool) or not on PATH; see [bmc] ipmitool")
        } else {
            format!("cannot run {tool}: {e}")
        })
    })?;
    let out = match tokio::time::timeout(t.timeout + Duration::from_millis(500), child.wait_with_output()).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return Err(BmcError::Tool(format!("waiting for {tool}: {e}"))),
        // Dropping the future kills the child (kill_on_drop).
        Err(_) => {
            return Err(BmcError::Unreachable(format!(
                "{}: no answer within {} s (is it up, and is IPMI over LAN enabled?)",
                t.label(),
                t.timeout.as_secs()
            )))
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    Err(classify(t, &String::from_utf8_lossy(&out.stderr), &stdout))
}

/// Turns `ipmitool -v` stderr into a [`BmcError`] that names the cause.
pub fn classify(t: &Target, stderr: &str, stdout: &str) -> BmcError {
    let l = t.label();
    let low = stderr.to_ascii_lowercase();
    if low.contains("hmac is invalid") {
        return BmcError::Auth(format!(
            "{l}: the BMC refused the password for user {:?} (RAKP 2 HMAC is invalid); set the right password",
            t.user
        ));
    }
    if low.contains("unauthorized name") {
        return BmcError::Auth(format!(
            "{l}: the BMC does not know user {:?} (unauthorized name)",
            t.user
        ));
    }
    if low.contains("insufficient privilege") || low.contains("requested privilege level") {
        return BmcError::Auth(format!(
            "{l}: user {:?} lacks the privilege for this command (needs operator or administrator)",
            t.user
        ));
    }
    if low.contains("invalid authentication algorithm")
        || low.contains("no matching cipher suite")
        || low.contains("invalid integrity algorithm")
        || low.contains("invalid confidentiality algorithm")
    {
        return BmcError::Refused(format!(
            "{l}: the BMC does not support cipher suite {}; set 'cipher_suite' (3 and 17 are common)",
            t.cipher_suite
        ));
    }
    if low.contains("get auth capabilities error")
        || low.contains("no response")
        || low.contains("unable to establish ipmi v2")
    {
        return BmcError::Unreachable(format!(
            "{l}: no IPMI answer (is it up, is the address and UDP port right, is IPMI over LAN enabled?)"
        ));
    }
    let detail: Vec<&str> = stderr
        .lines()
        .chain(stdout.lines())
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.starts_with("Loading IANA") && !s.starts_with('>'))
        .collect();
    let detail = detail.join("; ");
    let detail: String = detail.chars().take(400).collect();
    BmcError::Refused(format!(
        "{l}: ipmitool failed: {}",
        if detail.is_empty() { "no message" } else { &detail }
    ))
}

/// `chassis power status` → the state.
pub async fn power_state(tool: &str, t: &Target) -> Result<PowerState, BmcError> {
    let out = run(tool, t, &["chassis", "power", "status"]).await?;
    parse_power(&out)
        .ok_or_else(|| BmcError::Protocol(format!("{}: unexpected power status answer {out:?}", t.label())))
}

/// Reads `Chassis Power is on|off`.
pub fn parse_power(out: &str) -> Option<PowerState> {
    let line = out.lines().find(|l| l.contains("Chassis Power is"))?;
    Some(match line.rsplit(' ').next()?.trim() {
        "on" => PowerState::On,
        "off" => PowerState::Off,
        _ => PowerState::Unknown,
    })
}

/// `chassis power on|off|soft|cycle|reset`.
pub async fn reset(tool: &str, t: &Target, r: &Reset) -> Result<(), BmcError> {
    let word = r.ipmi().ok_or_else(|| {
        BmcError::Unsupported(format!(
            "'reset_type' {:?} is a Redfish reset type; IPMI BMCs take power-on, power-off (graceful or not) and restart",
            r.redfish()
        ))
    })?;
    run(tool, t, &["chassis", "power", word]).await.map(drop)
}

/// `chassis bootdev <dev> [options=persistent,efiboot]`.
pub async fn set_boot(tool: &str, t: &Target, b: BootRequest) -> Result<(), BmcError> {
    let mut opts = Vec::new();
    if b.persistent {
        opts.push("persistent");
    }
    if b.uefi == Some(true) {
        opts.push("efiboot");
    }
    let opt = format!("options={}", opts.join(","));
    let mut args = vec!["chassis", "bootdev", b.device.ipmi()];
    if !opts.is_empty() {
        args.push(&opt);
    }
    run(tool, t, &args).await.map(drop)
}

/// `chassis bootparam get 5` → the boot flags the BMC kept.
pub async fn boot(tool: &str, t: &Target) -> Result<BootReport, BmcError> {
    let out = run(tool, t, &["chassis", "bootparam", "get", "5"]).await?;
    parse_bootparam(&out).ok_or_else(|| {
        BmcError::Protocol(format!(
            "{}: unexpected boot parameter answer {:?}",
            t.label(),
            out.chars().take(200).collect::<String>()
        ))
    })
}

/// Reads the boot flags (boot parameter 5) as `ipmitool chassis bootparam get 5` prints them.
pub fn parse_bootparam(out: &str) -> Option<BootReport> {
    let selector = out.lines().find_map(|l| {
        l.split_once("Boot Device Selector :")
            .map(|(_, v)| v.trim().to_string())
    })?;
    let device = match selector.as_str() {
        "Force PXE" => Some(BootDevice::Pxe),
        s if s.contains("Hard-Drive") && !s.contains("Safe") => Some(BootDevice::Disk),
        s if s.contains("CD/DVD") => Some(BootDevice::Cdrom),
        s if s.contains("BIOS Setup") => Some(BootDevice::Bios),
        _ => None,
    };
    let has = |s: &str| out.lines().any(|l| l.contains(s));
    Some(BootReport {
        device,
        target: selector,
        persistent: if has("all future boots") {
            Some(true)
        } else if has("only next boot") {
            Some(false)
        } else {
            None
        },
        uefi: if has("BIOS EFI boot") {
            Some(true)
        } else if has("BIOS PC Compatible") {
            Some(false)
        } else {
            None
        },
        enabled: if has("Boot Flag Valid") {
            Some(true)
        } else if has("Boot Flag Invalid") {
            Some(false)
        } else {
            None
        },
    })
}

/// `fru print 0` (when the BMC has a FRU) and `mc info` → manufacturer, model, serial.
pub async fn identity(tool: &str, t: &Target) -> Result<Identity, BmcError> {
    let mc = run(tool, t, &["mc", "info"]).await?;
    // Many BMCs (and ipmi_sim) have no FRU 0; that is not an error.
    let fru = run(tool, t, &["fru", "print", "0"]).await.unwrap_or_default();
    Ok(parse_identity(&mc, &fru))
}

/// Picks manufacturer, model and serial from `mc info` and `fru print` output.
pub fn parse_identity(mc: &str, fru: &str) -> Identity {
    let field = |text: &str, key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            let v = v.trim();
            (k.trim() == key && !v.is_empty()).then(|| v.to_string())
        })
    };
    Identity {
        manufacturer: field(fru, "Product Manufacturer")
            .or_else(|| field(fru, "Board Mfg"))
            .or_else(|| field(mc, "Manufacturer Name")),
        model: field(fru, "Product Name")
            .or_else(|| field(fru, "Board Product"))
            .or_else(|| field(mc, "Product Name")),
        serial: field(fru, "Product Serial")
            .or_else(|| field(fru, "Board Serial"))
            .or_else(|| field(fru, "Chassis Serial")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmc::model::Protocol;

    fn target() -> Target {
        Target {
            protocol: Protocol::Ipmi,
            host: "127.0.0.1".into(),
            port: 9623,
            tls: false,
            user: "admin".into(),
            password: "secret".into(),
            cipher_suite: 3,
            system_id: None,
            verify_tls: true,
            timeout: Duration::from_secs(2),
            outbound: Default::default(),
        }
    }

    #[test]
    fn stderr_is_turned_into_the_cause() {
        let t = target();
        let wrong_pw = "Loading IANA PEN Registry...\n> RAKP 2 HMAC is invalid\nError: Unable to establish IPMI v2 / RMCP+ session\n";
        assert!(
            matches!(classify(&t, wrong_pw, ""), BmcError::Auth(m) if m.contains("password") && m.contains("127.0.0.1:9623"))
        );
        let wrong_user = "RAKP 2 message indicates an error : unauthorized name\nError: Unable to establish IPMI v2 / RMCP+ session\n";
        assert!(matches!(classify(&t, wrong_user, ""), BmcError::Auth(m) if m.contains("does not know user")));
        let down = "Get Auth Capabilities error\nError issuing Get Channel Authentication Capabilities request\nError: Unable to establish IPMI v2 / RMCP+ session\n";
        assert!(matches!(classify(&t, down, ""), BmcError::Unreachable(_)));
        let suite = "Error in open session response message : invalid authentication algorithm\n\nError: Unable to establish IPMI v2 / RMCP+ session\n";
        assert!(matches!(classify(&t, suite, ""), BmcError::Refused(m) if m.contains("cipher suite 3")));
        let other = "Loading IANA PEN Registry...\nSet Chassis Power Control to Cycle failed: Command not supported in present state\n";
        assert!(
            matches!(classify(&t, other, ""), BmcError::Refused(m) if m.contains("not supported in present state") && !m.contains("IANA"))
        );
        assert!(!format!("{t:?}").contains("secret"), "Debug hides the password");
    }

    #[test]
    fn answers_are_parsed() {
        assert_eq!(parse_power("Chassis Power is on\n"), Some(PowerState::On));
        assert_eq!(parse_power("Chassis Power is off\n"), Some(PowerState::Off));
        assert_eq!(parse_power("garbage"), None);
        // As ipmi_sim answers after `chassis bootdev pxe options=efiboot` (EFI not kept).
        let bp = "Boot parameter version: 1\nBoot parameter 5 is valid/unlocked\nBoot parameter data: 0004000000\n Boot Flags :\n   - Boot Flag Invalid\n   - Options apply to only next boot\n   - BIOS PC Compatible (legacy) boot \n   - Boot Device Selector : Force PXE\n   - BIOS verbosity : System Default\n";
        assert_eq!(
            parse_bootparam(bp).unwrap(),
            BootReport {
                device: Some(BootDevice::Pxe),
                target: "Force PXE".into(),
                persistent: Some(false),
                uefi: Some(false),
                enabled: Some(false),
            }
        );
        let disk = "   - Boot Flag Valid\n   - Options apply to all future boots\n   - BIOS EFI boot \n   - Boot Device Selector : Force Boot from default Hard-Drive\n";
        let r = parse_bootparam(disk).unwrap();
        assert_eq!(
            (r.device, r.persistent, r.uefi, r.enabled),
            (Some(BootDevice::Disk), Some(true), Some(true), Some(true))
        );
        assert_eq!(
            parse_bootparam(" - Boot Device Selector : No override\n")
                .unwrap()
                .device,
            None
        );
        let mc = "Device ID                 : 0\nManufacturer Name         : MontaVista Software, Inc.\nProduct Name              : Unknown (0xF02)\n";
        let id = parse_identity(mc, "");
        assert_eq!(id.manufacturer.as_deref(), Some("MontaVista Software, Inc."));
        assert_eq!((id.model.as_deref(), id.serial), (Some("Unknown (0xF02)"), None));
        let fru = " Product Manufacturer  : Dell Inc.\n Product Name          : PowerEdge R650\n Product Serial        : ABC1234\n";
        let id = parse_identity(mc, fru);
        assert_eq!(
            (id.manufacturer.as_deref(), id.model.as_deref(), id.serial.as_deref()),
            (Some("Dell Inc."), Some("PowerEdge R650"), Some("ABC1234"))
        );
    }

    #[tokio::test]
    async fn a_missing_tool_is_named() {
        let t = target();
        match run("/nonexistent/ipmitool", &t, &["chassis", "power", "status"]).await {
            Err(BmcError::Tool(m)) => assert!(m.contains("not installed"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
