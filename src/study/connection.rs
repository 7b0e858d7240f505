//! A study target's connection keys (`proxy`, `cacert`, `cert`, `key`, `tls_version`, `sni`, `tls_resume`, `zero_rtt`,
//! `connect_to`, `max_requests_per_connection`, `connection_rate`, `unix_socket`), and a gRPC target's types (`proto`, `protoset`, `import_path`):
//! checked with the study and given to each of its HTTP cases as the flags of the same names, files relative to
//! the study file.

use std::path::{Path, PathBuf};

use crate::cli::args::{OnOff, RequestArgs, TlsVersionArg};

/// The keys as a target gives them, files resolved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetConnection {
    pub proxy: Option<String>,
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub tls_version: Option<TlsVersionArg>,
    pub sni: Option<String>,
    pub tls_resume: Option<bool>,
    /// `--0rtt`: HTTP/3's early data on resumed sessions.
    pub zero_rtt: bool,
    pub connect_to: Vec<String>,
    pub max_requests_per_connection: Option<u64>,
    pub connection_rate: Option<f64>,
    /// `--unix-socket`, relative to the study file. Not looked for here: the target's `start` may make it.
    pub unix_socket: Option<PathBuf>,
    /// A grpc:// target's `.proto` file (`--proto`), compiled set (`--protoset`) and import directories.
    pub proto: Option<PathBuf>,
    pub protoset: Option<PathBuf>,
    pub import_path: Vec<PathBuf>,
}

/// The raw keys, as the study file's target holds them.
pub struct Raw<'a> {
    pub proxy: Option<String>,
    pub cacert: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
    pub tls_version: Option<String>,
    pub sni: Option<String>,
    pub tls_resume: Option<bool>,
    pub zero_rtt: bool,
    pub connect_to: Vec<String>,
    pub max_requests_per_connection: Option<u64>,
    pub connection_rate: Option<f64>,
    pub unix_socket: Option<String>,
    pub proto: Option<String>,
    pub protoset: Option<String>,
    pub import_path: Vec<String>,
    pub base_dir: &'a Path,
}

impl TargetConnection {
    /// The keys checked: Err((key, why)) names the key whose value is wrong (the rest is the cases' own check).
    pub fn from_raw(r: Raw<'_>) -> Result<TargetConnection, (&'static str, String)> {
        let file = |k: &'static str, f: Option<String>| match f {
            None => Ok(None),
            Some(f) => {
                let p = r.base_dir.join(&f);
                if p.is_file() {
                    Ok(Some(p))
                } else {
                    Err((
                        k,
                        format!("{k} \"{f}\": no such file ({}); paths are relative to the study file", p.display()),
                    ))
                }
            }
        };
        let tls_version = match r.tls_version.as_deref() {
            None => None,
            Some("1.2") => Some(TlsVersionArg::V1_2),
            Some("1.3") => Some(TlsVersionArg::V1_3),
            Some(v) => return Err(("tls_version", format!("tls_version = \"{v}\": write \"1.2\" or \"1.3\""))),
        };
        if r.cert.is_some() != r.key.is_some() {
            let k = if r.cert.is_some() { "cert" } else { "key" };
            return Err((k, "cert and key go together (mutual TLS): give both".into()));
        }
        if let Some(r) = r.connection_rate.filter(|r| !(r.is_finite() && *r > 0.0 && *r <= 1e9)) {
            return Err((
                "connection_rate",
                format!("connection_rate = {r}: give new connections a second, more than 0"),
            ));
        }
        let mut import_path = Vec::new();
        for d in r.import_path {
            let p = r.base_dir.join(&d);
            if !p.is_dir() {
                let why = format!(
                    "import_path \"{d}\": no such directory ({}); paths are relative to the study file",
                    p.display()
                );
                return Err(("import_path", why));
            }
            import_path.push(p);
        }
        Ok(TargetConnection {
            proto: file("proto", r.proto)?,
            protoset: file("protoset", r.protoset)?,
            import_path,
            proxy: r.proxy,
            cacert: file("cacert", r.cacert)?,
            cert: file("cert", r.cert)?,
            key: file("key", r.key)?,
            tls_version,
            sni: r.sni,
            tls_resume: r.tls_resume,
            zero_rtt: r.zero_rtt,
            connect_to: r.connect_to,
            max_requests_per_connection: r.max_requests_per_connection,
            connection_rate: r.connection_rate,
            unix_socket: r.unix_socket.map(|p| r.base_dir.join(p)),
        })
    }

    /// Some key is given (a key-value target takes none of them).
    pub fn any(&self) -> bool {
        *self != TargetConnection::default()
    }

    /// The keys as a case's flags.
    pub fn apply(&self, a: &mut RequestArgs) {
        a.proxy = self.proxy.clone();
        a.cacert = self.cacert.clone();
        a.cert = self.cert.clone();
        a.key = self.key.clone();
        a.tls_version = self.tls_version;
        a.sni = self.sni.clone();
        a.tls_resume = if self.tls_resume == Some(false) { OnOff::Off } else { OnOff::On };
        a.zero_rtt = self.zero_rtt;
        a.connect_to = self.connect_to.clone();
        a.max_requests_per_connection = self.max_requests_per_connection;
        a.connection_rate = self.connection_rate;
        a.unix_socket = self.unix_socket.clone();
        (a.proto, a.protoset, a.import_path) = (self.proto.clone(), self.protoset.clone(), self.import_path.clone());
    }
}

#[cfg(test)]
mod tests {
    fn plan(text: &str) -> Result<super::super::StudyPlan, String> {
        super::super::StudyPlan::parse(std::path::Path::new("s.toml"), text).map_err(|e| e.to_string())
    }

    const ONE: &str = "name = \"t\"\n[load]\nconnections = 1\nduration = \"1s\"\n[[target]]\nname = \"a\"\n";

    #[test]
    fn a_targets_connection_keys_become_each_cases_flags_files_relative_to_the_study() {
        let text = ONE.to_string()
            + "url = \"https://api.invalid/\"\nproxy = \"http://u:pw@127.0.0.1:3128\"\ncacert = \"Cargo.toml\"\n\
               cert = \"Cargo.toml\"\nkey = \"Cargo.lock\"\ntls_version = \"1.3\"\nsni = \"api.invalid\"\n\
               tls_resume = false\nconnect_to = [\"api.invalid:443:127.0.0.1:8443\"]\n\
               max_requests_per_connection = 100\nconnection_rate = 20.5\nunix_socket = \"run/app.sock\"\n\
               zero_rtt = true\n";
        let p = plan(&text).unwrap();
        let line = p.cases[0].args.join(" ");
        let here = std::fs::canonicalize(".").unwrap().display().to_string();
        for flag in [
            "-x http://u:pw@127.0.0.1:3128".to_string(),
            format!("--cacert {here}/Cargo.toml"),
            format!("--key {here}/Cargo.lock"),
            "--tls-version 1.3".into(),
            "--sni api.invalid".into(),
            "--tls-resume off".into(),
            "--connect-to api.invalid:443:127.0.0.1:8443".into(),
            "--max-requests-per-connection 100".into(),
            "--connection-rate 20.5".into(),
            format!("--unix-socket {here}/run/app.sock"),
            "--0rtt".into(),
        ] {
            assert!(line.contains(&flag), "{flag} in {line}");
        }
        // The proxy's password leaves the child's command line (ps) for its environment.
        let (shown, hidden) = crate::cli::render::split_secrets(&p.cases[0].args, crate::base::secrets::holds_secret);
        assert!(!shown.join(" ").contains("pw@") && hidden == ["-x", "http://u:pw@127.0.0.1:3128"], "{hidden:?}");
    }

    #[test]
    fn a_grpc_targets_types_and_a_workloads_call_become_each_cases_flags() {
        let text = ONE.to_string()
            + "url = \"grpcs://127.0.0.1:50051\"\nproto = \"Cargo.toml\"\nimport_path = [\"src\"]\n\
               [[workload]]\nname = \"hello\"\ncall = \"helloworld.Greeter/SayHello\"\nbody = \"{}\"\n";
        let p = plan(&text).unwrap();
        let line = p.cases[0].args.join(" ");
        let here = std::fs::canonicalize(".").unwrap().display().to_string();
        for flag in [
            format!("--proto {here}/Cargo.toml"),
            format!("--import-path {here}/src"),
            "--call helloworld.Greeter/SayHello".into(),
            "grpcs://127.0.0.1:50051".into(),
        ] {
            assert!(line.contains(&flag), "{flag} in {line}");
        }
    }

    #[test]
    fn wrong_connection_keys_are_refused_at_their_key() {
        for (keys, said) in [
            ("url = \"https://h/\"\ntls_version = \"1.1\"", "tls_version = \"1.1\": write \"1.2\" or \"1.3\""),
            ("url = \"https://h/\"\ncacert = \"missing.pem\"", "cacert \"missing.pem\": no such file"),
            ("url = \"https://h/\"\ncert = \"Cargo.toml\"", "cert and key go together"),
            ("url = \"redis://127.0.0.1:1\"\nproxy = \"http://127.0.0.1:3128\"", "are for HTTP targets"),
            ("url = \"redis://127.0.0.1:1\"\nproto = \"Cargo.toml\"", "are for HTTP targets"),
            ("url = \"grpc://h:1\"\nproto = \"missing.proto\"", "proto \"missing.proto\": no such file"),
            ("url = \"grpc://h:1\"\nimport_path = [\"nowhere\"]", "import_path \"nowhere\": no such directory"),
        ] {
            let e = plan(&format!("{ONE}{keys}\n")).unwrap_err();
            assert!(e.contains(said), "{keys}: {e}");
        }
    }
}
