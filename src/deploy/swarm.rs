//! Docker Swarm commands for one run spread over many machines: a service of N agent replicas (each finds its
//! segment from `{{.Task.Slot}}`, which Swarm expands in environment variables but not in arguments), a Docker
//! secret for the arguments holding secrets, and a collector service that merges the documents on the results
//! directory. What every orchestrator is told alike is `orchestrator::Deployment`'s; only the shell script that
//! says it to `docker` is made here, as text: hakaru never talks to Docker.

use std::path::PathBuf;

use crate::deploy::orchestrator::{Deployment, RESULTS_DIR, SLOT_VAR};
use crate::error::CliError;

/// Where Docker mounts a service's secrets.
const SECRETS_DIR: &str = "/run/secrets";

/// Everything the commands say, checked: built by the `swarm service` command from its flags.
#[derive(Clone, Debug)]
pub struct ServicePlan {
    /// The agents, their command, the common start and the collector; its name is the agents' service's (the
    /// collector is NAME-merge).
    pub d: Deployment,
    /// The directory bind-mounted at /results in every container, on every node where they run.
    pub results: PathBuf,
    /// The agents' network: `host`, or an overlay network's name.
    pub network: String,
}

impl ServicePlan {
    /// Checks the names and the results directory; the error names the flag and the fix.
    pub fn check(&self) -> Result<(), CliError> {
        self.d.check().map_err(CliError::new)?;
        // Docker's service names: a letter or digit, then letters, digits, '-', '_' or '.'; 63 at most, and the
        // collector adds "-merge".
        check_name("--name", &self.d.name, 57)?;
        check_name("--network", &self.network, 63)?;
        let shown = self.results.display().to_string();
        if !self.results.is_absolute() || shown.contains(',') || shown.chars().any(char::is_control) {
            return Err(CliError::new(format!(
                "--results '{shown}': give an absolute directory without commas (it is a bind mount's source), \
                 such as /var/lib/hakaru"
            )));
        }
        Ok(())
    }

    /// This run's directory on the host: a new one for every start.
    pub fn run_dir(&self) -> PathBuf {
        self.results.join(self.d.run_dir())
    }

    /// The Docker secret holding the agents' secret arguments: named after the run, so a second run does not
    /// collide with the first one's.
    fn secret_name(&self) -> String {
        format!("{}-args-{}", self.d.name, self.d.run_dir().trim_start_matches("run-"))
    }

    /// The script, for `sh` on a Swarm manager: the run's directory, the secret, the agents' service and the
    /// collector's, then where the merged document will be and how to clean up.
    pub fn to_script(&self) -> String {
        let d = &self.d;
        let dir = self.run_dir().display().to_string();
        let mount = format!("type=bind,source={dir},target={RESULTS_DIR}");
        let mut out = format!(
            "#!/bin/sh\n# hakaru swarm service: {} agents of '{}', the load starting at {} (run it on a Swarm manager: | sh)\n\
             set -e\nmkdir -p {}\n",
            d.agents,
            d.command.first().map_or("", String::as_str),
            d.start_at_text(),
            quote(&dir),
        );
        let create = |name: String, replicas: String| -> Vec<Vec<String>> {
            vec![
                vec!["docker".into(), "service".into(), "create".into(), "--detach".into()],
                vec!["--name".into(), name],
                vec!["--replicas".into(), replicas, "--restart-condition".into(), "none".into()],
                vec!["--mount".into(), mount.clone()],
            ]
        };
        let env = |name: &str, value: &str| vec!["--env".to_string(), format!("{name}={value}")];
        let mut agents = create(d.name.clone(), d.agents.to_string());
        agents.push(vec!["--network".into(), self.network.clone()]);
        // The one value Swarm templates: each replica's slot, in its environment.
        agents.push(env(SLOT_VAR, "{{.Task.Slot}}"));
        agents.extend(d.agent_env().iter().map(|(name, value)| env(name, value)));
        if let Some(json) = d.secret_json() {
            let secret = self.secret_name();
            // The secret's content is in this one line of the script only: piped to sh, never saved with it.
            out.push_str(&format!("printf '%s' {} | docker secret create {} -\n", quote(&json), quote(&secret)));
            agents.push(vec!["--secret".into(), format!("source={secret},target={secret}")]);
            agents.push(env(crate::base::secrets::SECRET_ARGS_FILE_VAR, &format!("{SECRETS_DIR}/{secret}")));
        }
        agents.push(std::iter::once(d.image.clone()).chain(d.agent_args()).collect());
        out.push_str(&command_lines(&agents));
        let mut collector = create(format!("{}-merge", d.name), "1".into());
        collector.extend(d.redact.iter().map(|(name, value)| env(name, value)));
        collector.push(std::iter::once(d.image.clone()).chain(d.collector_args()).collect());
        out.push_str(&command_lines(&collector));
        out.push_str(&format!(
            "echo 'agents: docker service ps {name}; merged: {dir}/merged.json (summary: docker service logs {name}-merge)'\n\
             # afterwards: docker service rm {name} {name}-merge{}\n",
            if d.secret_args.is_empty() { String::new() } else { format!("; docker secret rm {}", self.secret_name()) },
            name = d.name,
        ));
        out
    }
}

/// One command of the script, a line of words per group (a flag and its value), every word quoted for sh.
fn command_lines(groups: &[Vec<String>]) -> String {
    let lines: Vec<String> =
        groups.iter().map(|words| words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")).collect();
    format!("{}\n", lines.join(" \\\n  "))
}

/// A word for sh: as it is when it holds only characters sh leaves alone, else in single quotes.
fn quote(word: &str) -> String {
    let plain = !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b));
    if plain { word.to_string() } else { format!("'{}'", word.replace('\'', "'\\''")) }
}

/// A Docker object name: a letter or digit first, then letters, digits, '-', '_' or '.'.
fn check_name(flag: &str, value: &str, max: usize) -> Result<(), CliError> {
    let ok = value.len() <= max
        && value.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        return Ok(());
    }
    Err(CliError::new(format!(
        "{flag} '{value}': not a Docker name; use at most {max} letters, digits, '-', '_' and '.', starting with a \
         letter or digit"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> ServicePlan {
        ServicePlan {
            d: crate::deploy::orchestrator::tests::deployment(),
            results: "/var/lib/hakaru".into(),
            network: "host".into(),
        }
    }

    #[test]
    fn words_are_quoted_for_sh_only_where_needed() {
        assert_eq!(quote("run"), "run");
        assert_eq!(quote("HAKARU_AGENT_SLOT={{.Task.Slot}}"), "'HAKARU_AGENT_SLOT={{.Task.Slot}}'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn the_script_runs_n_replicas_once_with_the_slot_in_their_environment() {
        let s = plan().to_script();
        assert!(s.contains("--replicas 3 --restart-condition none"), "{s}");
        assert!(s.contains("--env 'HAKARU_AGENT_SLOT={{.Task.Slot}}'"), "{s}");
        assert!(s.contains("--mount type=bind,source=/var/lib/hakaru/run-1795467600,target=/results"), "{s}");
        assert!(s.contains("--segment auto/3"), "{s}");
        assert!(s.contains("collect /results --agents 3"), "{s}");
        assert!(!s.contains("docker secret"), "{s}");
    }

    #[test]
    fn secrets_go_to_a_docker_secret_read_from_a_file() {
        let mut p = plan();
        p.d.secret_args = vec!["-H".into(), "Authorization: Bearer it's".into()];
        let s = p.to_script();
        let secret_line = s.lines().find(|l| l.contains("docker secret create")).unwrap();
        assert!(secret_line.contains("Bearer it'\\''s"), "{secret_line}");
        // Only that line holds it; the agents read the file Docker mounts.
        assert_eq!(s.matches("Bearer").count(), 1, "{s}");
        assert!(s.contains("--env HAKARU_SECRET_ARGS_FILE=/run/secrets/hakaru-args-1795467600"), "{s}");
    }

    #[test]
    fn names_and_the_results_directory_are_checked_with_the_flag_named() {
        let mut p = plan();
        p.d.name = "-x".into();
        assert!(p.check().unwrap_err().to_string().starts_with("--name '-x'"));
        let mut p = plan();
        p.results = "results".into();
        assert!(p.check().unwrap_err().to_string().starts_with("--results 'results'"));
        assert!(plan().check().is_ok());
    }
}
