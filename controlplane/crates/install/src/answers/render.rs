//! Rendering answer templates: minijinja with undefined variables as errors
//! ([`minijinja::UndefinedBehavior::Strict`]) and a fuel limit (a template cannot loop
//! forever), no auto-escaping (answer files are not HTML), and the filters answer files
//! need: `shell_quote` (one POSIX shell word), `xml` (XML text or attribute escaping),
//! `tojson` (JSON, also valid YAML) and minijinja's built-ins. The variables are
//! [`AnswerContext`] plus `site` ([`SiteVars`]). Every error carries the template line
//! ([`Problem::line`]). The first validation step ([`check_template`]: syntax, unknown
//! variables, a render against sample values) lives here too. No state.

use std::collections::BTreeSet;

use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use serde::Serialize;
use utoipa::ToSchema;

use super::{site::SiteVars, AnswerContext, HostVars, ImageVars, ServerVars, TaskVars};

/// The name the template is compiled under (appears in no message).
const NAME: &str = "answer";

/// One problem found while checking a template or its output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Problem {
    /// 1-based line (of the template for template problems, of the rendered output for
    /// output problems), when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    /// A problem at `line`.
    pub fn at(line: Option<usize>, message: impl Into<String>) -> Self {
        Self {
            line,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Everything a template sees: the context's four objects and `site`.
#[derive(Debug, Clone, Serialize)]
pub struct Vars<'a> {
    /// The machine.
    pub host: &'a HostVars,
    /// The task.
    pub task: &'a TaskVars,
    /// The server.
    pub server: &'a ServerVars,
    /// The image, or none.
    pub image: &'a Option<ImageVars>,
    /// Site settings.
    pub site: &'a SiteVars,
}

/// Percent-encodes everything but RFC 3986 unreserved characters (`A-Za-z0-9-._~`).
pub fn url_encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn environment(source: &str, fuel: u64) -> Result<Environment<'static>, minijinja::Error> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(fuel));
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()?,
    );
    env.add_filter("shell_quote", |v: String| bootlane_core::escape::shell_word(&v));
    env.add_filter("xml", |v: String| bootlane_core::escape::xml_text(&v));
    env.add_filter("urlencode", |v: String| url_encode(&v));
    env.add_template_owned(NAME.to_string(), source.to_string())?;
    Ok(env)
}

/// Largest rendered answer (bytes): fuel bounds the instructions, this bounds the output
/// (one instruction can print a 100 MB string).
pub const MAX_OUTPUT: usize = 4 << 20;

/// A writer that refuses more than [`MAX_OUTPUT`] bytes.
struct Limited(Vec<u8>);

impl std::io::Write for Limited {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + b.len() > MAX_OUTPUT {
            return Err(std::io::Error::other("answer output too large"));
        }
        self.0.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Renders `tmpl` with `vars` into at most [`MAX_OUTPUT`] bytes.
fn render_limited(tmpl: &minijinja::Template<'_, '_>, vars: &impl Serialize, names: &str) -> Result<String, Problem> {
    let mut out = Limited(Vec::new());
    match tmpl.render_captured_to(minijinja::value::Serde(vars), &mut out) {
        Ok(_) => Ok(String::from_utf8_lossy(&out.0).into_owned()),
        Err(e) if e.kind() == ErrorKind::WriteFailure => Err(Problem::at(
            e.line(),
            format!(
                "the output is larger than {} MiB; an answer file is never that big",
                MAX_OUTPUT >> 20
            ),
        )),
        Err(e) => Err(problem_in(&e, names)),
    }
}

/// A minijinja error as a [`Problem`] with its template line.
pub fn problem(e: &minijinja::Error) -> Problem {
    problem_in(e, ANSWER_VARS)
}

const ANSWER_VARS: &str = "host, task, server, image and site (see GET /netboot/answer-templates/presets)";

/// A minijinja error as a [`Problem`]; `names` lists the variables the template has (for
/// the undefined-value message).
pub fn problem_in(e: &minijinja::Error, names: &str) -> Problem {
    let what = match e.kind() {
        ErrorKind::OutOfFuel => {
            "the template ran out of fuel (an endless or too long loop); [answers] fuel sets the budget".to_string()
        }
        ErrorKind::UndefinedError => format!(
            "undefined value{}: the variables are {names}",
            e.detail().map(|d| format!(" ({d})")).unwrap_or_default()
        ),
        _ => match e.detail() {
            Some(d) => format!("{}: {d}", e.kind()),
            None => e.kind().to_string(),
        },
    };
    Problem::at(e.line(), what)
}

/// Renders `source` with `ctx` and `site`, stopping after `fuel` instructions.
///
/// # Errors
/// The first syntax or render error, with its line.
pub fn render(source: &str, ctx: &AnswerContext, site: &SiteVars, fuel: u64) -> Result<String, Problem> {
    let env = environment(source, fuel).map_err(|e| problem(&e))?;
    let tmpl = env.get_template(NAME).map_err(|e| problem(&e))?;
    let vars = Vars {
        host: &ctx.host,
        task: &ctx.task,
        server: &ctx.server,
        image: &ctx.image,
        site,
    };
    render_limited(&tmpl, &vars, ANSWER_VARS)
}

/// Renders `source` with any serialisable `vars` under the same rules as answer files
/// (strict undefined, `fuel` instructions, at most [`MAX_OUTPUT`] bytes, the same
/// filters); `names` describes the variables for the undefined-value message. Post-install
/// scripts render through this.
///
/// # Errors
/// The first syntax or render error, with its line.
pub fn render_with(source: &str, vars: &impl Serialize, fuel: u64, names: &str) -> Result<String, Problem> {
    let env = environment(source, fuel).map_err(|e| problem_in(&e, names))?;
    let tmpl = env.get_template(NAME).map_err(|e| problem_in(&e, names))?;
    render_limited(&tmpl, vars, names)
}

/// Checks the syntax only (what a stored template must pass).
///
/// # Errors
/// The syntax error with its line.
pub fn compile(source: &str) -> Result<(), Problem> {
    let env = environment(source, 1000).map_err(|e| problem(&e))?;
    env.get_template(NAME).map(|_| ()).map_err(|e| problem(&e))
}

/// The sample values templates are checked and previewed with when no host or task is
/// chosen: a documentation-range address (RFC 5737), the sample image a Debian 12.
pub fn sample_context() -> AnswerContext {
    let token = "sample0token0000000000000000000000000000".to_string();
    AnswerContext {
        host: HostVars {
            name: "sample-host".into(),
            mac: "52:54:00:12:34:56".into(),
            ip: Some("192.0.2.10".into()),
            profile: Some("Default".into()),
        },
        task: TaskVars {
            id: 1,
            answer_url: format!("http://192.0.2.1:8080/api/v1/netboot/answer/1?token={token}"),
            report_url: format!("http://192.0.2.1:8080/api/v1/netboot/report/1/{token}"),
            baseline_sh_url: format!("http://192.0.2.1:8080/api/v1/netboot/baseline/1/bundle.sh?token={token}"),
            baseline_ps1_url: format!("http://192.0.2.1:8080/api/v1/netboot/baseline/1/bundle.ps1?token={token}"),
            token,
        },
        server: ServerVars {
            address: "192.0.2.1:8080".into(),
            base_url: "http://192.0.2.1:8080".into(),
        },
        image: Some(ImageVars {
            id: 1,
            family: "debian".into(),
            version: Some("12".into()),
            kernel: Some("http://192.0.2.1:8080/boot/images/1/install.amd/vmlinuz".into()),
            initrds: vec!["http://192.0.2.1:8080/boot/images/1/install.amd/initrd.gz".into()],
            repo_url: Some("http://192.0.2.1:8080/boot/images/1".into()),
        }),
    }
}

/// The first line of `source` holding `needle` (1-based).
fn line_of(source: &str, needle: &str) -> Option<usize> {
    source.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}

/// Field names of each top-level variable, from the sample values.
fn known_fields(site: &SiteVars) -> Vec<(&'static str, BTreeSet<String>)> {
    let ctx = sample_context();
    let keys = |v: serde_json::Value| -> BTreeSet<String> {
        v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
    };
    vec![
        ("host", keys(serde_json::to_value(&ctx.host).unwrap_or_default())),
        ("task", keys(serde_json::to_value(&ctx.task).unwrap_or_default())),
        ("server", keys(serde_json::to_value(&ctx.server).unwrap_or_default())),
        ("image", keys(serde_json::to_value(&ctx.image).unwrap_or_default())),
        ("site", keys(serde_json::to_value(site).unwrap_or_default())),
    ]
}

/// The first validation step: syntax, unknown variables (also in branches the sample
/// values do not take), and a render against `ctx` (the sample values or a chosen host
/// and task). Answers the rendered text when it rendered, and every problem found.
pub fn check_template(source: &str, ctx: &AnswerContext, site: &SiteVars, fuel: u64) -> (Option<String>, Vec<Problem>) {
    let env = match environment(source, fuel) {
        Ok(e) => e,
        Err(e) => return (None, vec![problem(&e)]),
    };
    let tmpl = match env.get_template(NAME) {
        Ok(t) => t,
        Err(e) => return (None, vec![problem(&e)]),
    };
    let mut problems = Vec::new();
    let fields = known_fields(site);
    let globals: BTreeSet<String> = env.globals().map(|(k, _)| k.to_string()).collect();
    let mut unknown: Vec<String> = tmpl
        .undeclared_variables(true)
        .into_iter()
        .filter(|name| {
            let mut parts = name.split('.');
            let top = parts.next().unwrap_or_default();
            if globals.contains(top) {
                return false;
            }
            match fields.iter().find(|(t, _)| *t == top) {
                None => true,
                Some((_, f)) => parts.next().is_some_and(|field| !f.contains(field)),
            }
        })
        .collect();
    unknown.sort();
    for name in unknown {
        problems.push(Problem::at(
            line_of(source, &name),
            format!("unknown variable '{name}': the variables are host, task, server, image and site"),
        ));
    }
    let vars = Vars {
        host: &ctx.host,
        task: &ctx.task,
        server: &ctx.server,
        image: &ctx.image,
        site,
    };
    match render_limited(&tmpl, &vars, ANSWER_VARS) {
        Ok(out) => (Some(out), problems),
        Err(p) => {
            // The undeclared-variable scan may already name it (without a line).
            if !problems.iter().any(|q| q.line == p.line && p.line.is_some()) {
                problems.push(p);
            }
            (None, problems)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::site::SiteSettings;

    fn site() -> SiteVars {
        SiteSettings {
            timezone: "Etc/UTC".into(),
            locale: "en_US.UTF-8".into(),
            keyboard: "us".into(),
            ssh_authorized_keys: vec![],
            has_root_password: false,
            root_password_hash: None,
            mirror: None,
        }
        .vars()
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let e = render("a\nb\n{% if %}\n", &sample_context(), &site(), 10_000).unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        let e = compile("one\n{{ host.name \n").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
    }

    #[test]
    fn an_undefined_variable_is_an_error_with_its_line() {
        let e = render(
            "ok {{ host.name }}\n{{ host.nope }}\n",
            &sample_context(),
            &site(),
            10_000,
        )
        .unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.message.contains("undefined"), "{e}");
        // Also when printed inside a loop or tested in an if.
        let e = render("\n\n{% if nothing %}x{% endif %}", &sample_context(), &site(), 10_000).unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
    }

    #[test]
    fn unknown_variables_in_branches_not_taken_are_found() {
        let src = "{% if false %}\n{{ host.hostnme }}\n{{ sitee }}\n{% endif %}\n{{ site.timezone }}\n";
        let (out, problems) = check_template(src, &sample_context(), &site(), 10_000);
        assert!(out.is_some());
        let lines: Vec<_> = problems.iter().map(|p| (p.line, p.message.clone())).collect();
        assert_eq!(problems.len(), 2, "{lines:?}");
        assert_eq!(problems[0].line, Some(2), "{lines:?}");
        assert!(problems[0].message.contains("host.hostnme"));
        assert_eq!(problems[1].line, Some(3), "{lines:?}");
    }

    #[test]
    fn fuel_stops_an_endless_loop() {
        // 10^15 iterations: only the fuel can stop it in time.
        let src = "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100000) %}{% endfor %}{% endfor %}{% endfor %}";
        let started = std::time::Instant::now();
        let e = render(src, &sample_context(), &site(), 100_000).unwrap_err();
        assert!(e.message.contains("fuel"), "{e}");
        assert_eq!(e.line, Some(1));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // Recursion is stopped too (by fuel or the recursion limit).
        let src = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}";
        assert!(render(src, &sample_context(), &site(), 100_000).is_err());
    }

    #[test]
    fn the_output_size_is_bounded() {
        let src = "{% for i in range(1000) %}{{ 'x' * 100000000 }}{% endfor %}";
        let e = render(src, &sample_context(), &site(), 200_000).unwrap_err();
        assert!(e.message.contains("larger than 4 MiB"), "{e}");
    }

    #[test]
    fn filters_quote_for_shell_and_xml() {
        let out = render(
            "{{ \"it's\" | shell_quote }} {{ \"<a & 'b'>\" | xml }} {{ none_or | default('d') }}",
            &sample_context(),
            &site(),
            10_000,
        );
        // `none_or` is undefined: `default` is the one place strict mode allows that.
        assert_eq!(out.unwrap(), r"'it'\''s' &lt;a &amp; &apos;b&apos;&gt; d");
    }
}
