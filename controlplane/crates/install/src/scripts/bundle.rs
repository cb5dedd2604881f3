//! Executable bundles of a machine's scripts (one executable bundle per platform,
//! behind a public pull endpoint): [`shell`] writes a POSIX `sh` program for Unix
//! machines (the `sh`, `bash` and `python` scripts), [`powershell`] a PowerShell
//! program for Windows (the `powershell` and `cmd` scripts). Each runs its scripts in
//! order, stops at the first failure (its exit code is the bundle's), and reports every
//! result to the report URL (script id, exit code, duration in ms as query parameters,
//! the last 4 KiB of the combined output as the `text/plain` body). A script that did
//! not render becomes a step that prints why and fails. Pure text generation, no state.

use std::fmt::Write as _;

use base64::Engine as _;
use rand::RngCore;

use super::{AssignedScript, Assignment, ScriptType, MAX_REPORT_OUTPUT};
use bootlane_core::escape::{comment_text, powershell_word, shell_word};

/// A here-document delimiter found in none of `texts`.
fn delimiter(texts: &[&str]) -> String {
    loop {
        let mut b = [0u8; 8];
        rand::rngs::OsRng.fill_bytes(&mut b);
        let d = format!("BOOTLANE_EOF_{}", hex::encode(b));
        if texts.iter().all(|t| !t.contains(&d)) {
            return d;
        }
    }
}

/// The program text of a step: the rendered script, or one that says why it cannot run.
fn program(s: &AssignedScript, unix: bool) -> (String, ScriptType) {
    match (&s.content, &s.error) {
        (Some(c), _) => (c.clone(), s.kind),
        (None, e) => {
            let why = e.as_deref().unwrap_or("the script did not render");
            if unix {
                (format!("echo {} >&2\nexit 1\n", shell_word(why)), ScriptType::Sh)
            } else {
                (
                    format!("Write-Error {}\nexit 1\n", powershell_word(why)),
                    ScriptType::Powershell,
                )
            }
        }
    }
}

/// The Unix bundle for `a`: a POSIX `sh` program; `report_url` already carries the
/// token (`...?token=...`).
pub fn shell(a: &Assignment, report_url: &str) -> String {
    let steps: Vec<(&AssignedScript, String, ScriptType)> = a
        .scripts
        .iter()
        .filter(|s| s.kind.unix())
        .map(|s| {
            let (p, k) = program(s, true);
            (s, p, k)
        })
        .collect();
    let texts: Vec<&str> = steps.iter().map(|(_, p, _)| p.as_str()).collect();
    let eof = delimiter(&texts);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"#!/bin/sh
# Bootlane post-install bundle for {mac}: {n} script(s) from the baseline(s) {baselines}.
# Runs them in order, stops at the first failure, and reports each result to Bootlane.
BL_REPORT={report}
BL_DIR=$(mktemp -d /tmp/bootlane-baseline.XXXXXX) || exit 1
trap 'rm -rf "$BL_DIR"' EXIT
bl_now_ms() {{
    t=$(date +%s%3N 2>/dev/null)
    case $t in ''|*N*) t=$(( $(date +%s) * 1000 )) ;; esac
    echo "$t"
}}
bl_report() {{ # script-id exit-code duration-ms output-file
    u="$BL_REPORT&script=$1&exit_code=$2&duration_ms=$3"
    tail -c {max} "$4" >"$BL_DIR/tail" 2>/dev/null || : >"$BL_DIR/tail"
    if command -v curl >/dev/null 2>&1; then
        curl -fsS -m 30 -X POST -H 'Content-Type: text/plain' --data-binary "@$BL_DIR/tail" "$u" >/dev/null
    elif wget --help 2>&1 | grep -q -- --post-file; then
        wget -q -T 30 -O /dev/null --header='Content-Type: text/plain' --post-file="$BL_DIR/tail" "$u"
    else
        wget -q -T 30 -O /dev/null "$u"
    fi || echo "bootlane: could not report the result of script $1" >&2
}}
bl_run() {{ # script-id name interpreter file
    echo "bootlane: running script $2 (id $1)"
    s=$(bl_now_ms)
    $3 "$4" >"$BL_DIR/out" 2>&1
    rc=$?
    e=$(bl_now_ms)
    cat "$BL_DIR/out"
    bl_report "$1" "$rc" "$((e - s))" "$BL_DIR/out"
    if [ "$rc" -ne 0 ]; then
        echo "bootlane: script $2 failed with exit code $rc; stopping" >&2
        exit "$rc"
    fi
}}
"#,
        mac = a.mac,
        n = steps.len(),
        baselines = if a.baselines.is_empty() {
            "(none)".to_string()
        } else {
            a.baselines
                .iter()
                .map(|b| comment_text(&b.name))
                .collect::<Vec<_>>()
                .join(", ")
        },
        report = shell_word(report_url),
        max = MAX_REPORT_OUTPUT,
    );
    for (s, p, kind) in &steps {
        let interpreter = match kind {
            ScriptType::Bash => "bash",
            ScriptType::Python => "python3",
            _ => "sh",
        };
        let file = format!("\"$BL_DIR/{}.{}\"", s.id, kind.extension());
        let _ = writeln!(out, "cat >{file} <<'{eof}'");
        out.push_str(p);
        if !p.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{eof}");
        let _ = writeln!(out, "bl_run {} {} {interpreter} {file}", s.id, shell_word(&s.name));
    }
    let _ = writeln!(out, "echo \"bootlane: all {} script(s) succeeded\"", steps.len());
    out
}

/// The Windows bundle for `a`: a PowerShell program (5.1 or 7) running the `powershell`
/// scripts with the PowerShell that runs the bundle and the `cmd` scripts with
/// `cmd.exe`; each script's text is embedded base64-encoded (UTF-8), so no content can
/// end the bundle's own quoting.
pub fn powershell(a: &Assignment, report_url: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = String::new();
    let steps: Vec<(&AssignedScript, String, ScriptType)> = a
        .scripts
        .iter()
        .filter(|s| !s.kind.unix())
        .map(|s| {
            let (p, k) = program(s, false);
            (s, p, k)
        })
        .collect();
    let _ = write!(
        out,
        r#"# Bootlane post-install bundle for {mac}: {n} script(s).
# Runs them in order, stops at the first failure, and reports each result to Bootlane.
$ErrorActionPreference = 'Continue'
$BlReport = {report}
$BlDir = Join-Path ([IO.Path]::GetTempPath()) ('bootlane-baseline-' + [guid]::NewGuid())
New-Item -ItemType Directory -Path $BlDir | Out-Null
$BlShell = (Get-Process -Id $PID).Path
function Send-BlReport($Id, $Code, $Ms, $Text) {{
    if ($Text.Length -gt {max}) {{ $Text = $Text.Substring($Text.Length - {max}) }}
    try {{
        Invoke-RestMethod -Method Post -Uri "$BlReport&script=$Id&exit_code=$Code&duration_ms=$Ms" `
            -ContentType 'text/plain; charset=utf-8' -Body ([Text.Encoding]::UTF8.GetBytes($Text)) | Out-Null
    }} catch {{ Write-Warning "bootlane: could not report the result of script $Id" }}
}}
function Invoke-BlScript($Id, $Name, $Kind, $B64) {{
    Write-Output "bootlane: running script $Name (id $Id)"
    $ext = if ($Kind -eq 'cmd') {{ 'cmd' }} else {{ 'ps1' }}
    $file = Join-Path $BlDir "$Id.$ext"
    [IO.File]::WriteAllText($file, [Text.Encoding]::UTF8.GetString([Convert]::FromBase64String($B64)))
    $sw = [Diagnostics.Stopwatch]::StartNew()
    if ($Kind -eq 'cmd') {{
        $text = & cmd.exe /c $file 2>&1 | Out-String
    }} else {{
        $text = & $BlShell -NoProfile -ExecutionPolicy Bypass -File $file 2>&1 | Out-String
    }}
    $code = $LASTEXITCODE
    if ($null -eq $code) {{ $code = 0 }}
    $sw.Stop()
    Write-Output $text
    Send-BlReport $Id $code ([int64]$sw.Elapsed.TotalMilliseconds) $text
    if ($code -ne 0) {{
        Write-Error "bootlane: script $Name failed with exit code $code; stopping"
        Remove-Item -Recurse -Force $BlDir -ErrorAction SilentlyContinue
        exit $code
    }}
}}
"#,
        mac = a.mac,
        n = steps.len(),
        report = powershell_word(report_url),
        max = MAX_REPORT_OUTPUT,
    );
    for (s, p, kind) in &steps {
        let _ = writeln!(
            out,
            "Invoke-BlScript {} {} '{}' '{}'",
            s.id,
            powershell_word(&s.name),
            kind.as_str(),
            b64.encode(p.as_bytes())
        );
    }
    let _ = writeln!(
        out,
        "Remove-Item -Recurse -Force $BlDir -ErrorAction SilentlyContinue\nWrite-Output \"bootlane: all {} script(s) succeeded\"",
        steps.len()
    );
    out
}
