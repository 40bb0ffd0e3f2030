"""`gpucluster users access` against stubbed CloudFormation and EC2: the document and policy
read back from the Cluster stack's outputs, a running login node found by its tags, and each
person's commands, which piped to `sh` run exactly the calls they name, whatever AWS answered;
bad input is one line, exit 2, before any AWS call; a cluster not deployed for it, exit 1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from gpucluster.aws import clients
from gpucluster.cli import app
from tests.aws.stubs import StubbedAws
from tests.conftest import REPO
from tests.shell_pipe import HOSTILE_NAMES, pipe_to_sh

CONFIG = str(REPO / "examples" / "mixed.yaml")
REGION = "us-east-2"
DOCUMENT = "gpucluster-mixed-sessions"
POLICY = "arn:aws:iam::123456789012:policy/gpucluster-mixed-us-east-2-people"
LOGIN = "i-0aaaaaaaaaaaaaaaa"
OTHER_LOGIN = "i-0bbbbbbbbbbbbbbbb"
LOGIN_FILTERS = [
    {"Name": "tag:gpucluster:cluster", "Values": ["mixed"]},
    {"Name": "tag:gpucluster:role", "Values": ["login"]},
    {"Name": "instance-state-name", "Values": ["running"]},
]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubbedAws]:
    stubbed = StubbedAws()
    monkeypatch.setattr(clients, "make_client", stubbed.client)
    yield stubbed
    stubbed.check_all_used()


def stack_is(aws: StubbedAws, outputs: dict[str, str]) -> None:
    stack = {
        "StackName": "mixed-cluster",
        "CreationTime": "2027-06-01T00:00:00Z",
        "StackStatus": "UPDATE_COMPLETE",
        "Outputs": [{"OutputKey": key, "OutputValue": value} for key, value in outputs.items()],
    }
    aws.stub("cloudformation", REGION).add_response(
        "describe_stacks", {"Stacks": [stack]}, {"StackName": "mixed-cluster"}
    )


def login_nodes_are(aws: StubbedAws, *ids: str) -> None:
    instances = [{"InstanceId": i} for i in ids]
    aws.ec2(REGION).add_response(
        "describe_instances",
        {"Reservations": [{"Instances": instances}] if ids else []},
        {"Filters": LOGIN_FILTERS},
    )


def deployed(aws: StubbedAws) -> None:
    stack_is(aws, {"SessionDocumentName": DOCUMENT, "PeoplePolicyArn": POLICY})
    login_nodes_are(aws, LOGIN, OTHER_LOGIN)


def run(*args: str):
    return CliRunner().invoke(app, ["users", "access", *args])


def errors(output: str) -> list[str]:
    """The error lines (the example's own warnings about its unpinned AMI come first)."""
    return [line for line in output.splitlines() if not line.startswith("warning ")]


def commands(stdout: str) -> list[str]:
    return [line[4:] for line in stdout.splitlines() if line.startswith("    ")]


def test_each_persons_commands_run_exactly_the_calls_they_name(aws, tmp_path):
    deployed(aws)
    result = run(CONFIG, "--role", "alice=AliceRole", "--role", "carol=ml-carol")
    assert result.exit_code == 0, result.output
    shell = pipe_to_sh("\n".join(commands(result.stdout)) + "\n", ["aws", "ssh"], tmp_path)
    assert (shell.returncode, shell.strays) == (0, [])
    shell_as = ["ssm", "start-session", "--region", REGION, "--target", LOGIN, "--document-name", DOCUMENT]
    proxy = (
        f"ProxyCommand=aws ssm start-session --region {REGION} --target %h "
        "--document-name AWS-StartSSHSession --parameters portNumber=%p"
    )
    assert [(call.command, call.argv) for call in shell.calls] == [
        (
            "aws",
            [
                "ec2",
                "describe-instances",
                "--region",
                REGION,
                "--filters",
                "Name=tag:gpucluster:cluster,Values=mixed",
                "Name=tag:gpucluster:role,Values=login",
                "Name=instance-state-name,Values=running",
                "--query",
                "Reservations[].Instances[].InstanceId",
                "--output",
                "text",
            ],
        ),
        ("aws", ["iam", "tag-role", "--role-name", "AliceRole", "--tags", "Key=SSMSessionRunAs,Value=alice"]),
        ("aws", ["iam", "attach-role-policy", "--role-name", "AliceRole", "--policy-arn", POLICY]),
        ("aws", shell_as),
        # alice has a key under users:, so ssh as well
        ("ssh", ["-o", proxy, f"alice@{LOGIN}"]),
        ("aws", shell_as),
        ("aws", ["iam", "tag-role", "--role-name", "ml-carol", "--tags", "Key=SSMSessionRunAs,Value=carol"]),
        ("aws", ["iam", "attach-role-policy", "--role-name", "ml-carol", "--policy-arn", POLICY]),
        ("aws", shell_as),
    ]


def test_a_person_without_a_role_is_told_what_to_tag(aws):
    deployed(aws)
    result = run(CONFIG)
    assert result.exit_code == 0, result.output
    assert (
        "bob: no --role bob=ROLE given; tag the IAM role bob signs in with SSMSessionRunAs=bob"
        in result.stdout
    )
    assert "iam " not in "\n".join(commands(result.stdout))
    assert f"login nodes running: {LOGIN}, {OTHER_LOGIN}" in result.stdout


@pytest.mark.parametrize("name", [name for name in HOSTILE_NAMES if name.isprintable()])
def test_what_aws_answered_reaches_the_command_as_one_word(aws, tmp_path, name):
    stack_is(aws, {"SessionDocumentName": name, "PeoplePolicyArn": POLICY})
    login_nodes_are(aws, name)
    result = run(CONFIG, "--role", "alice=AliceRole")
    assert result.exit_code == 0, result.output
    shell = pipe_to_sh("\n".join(commands(result.stdout)) + "\n", ["aws", "ssh"], tmp_path)
    assert (shell.returncode, shell.strays) == (0, [])
    shells = [call.argv for call in shell.calls if call.argv[:2] == ["ssm", "start-session"]]
    assert shells and all(argv[5] == name and argv[7] == name for argv in shells)
    assert [call.argv[-1] for call in shell.calls if call.command == "ssh"] == [f"alice@{name}"]


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ("alice", "'alice' is not NAME=ROLE"),
        ("eve=EveRole", "'eve' is not under users:; pass one of: alice, bob, carol"),
        ("alice=arn:aws:iam::123456789012:role/AliceRole", "is not an IAM role name"),
        ("alice=n1; touch pwned", "is not an IAM role name"),
    ],
)
def test_a_bad_role_is_one_line_before_any_aws_call(aws, value, what):
    result = run(CONFIG, "--role", value)
    assert result.exit_code == 2, result.output
    (line,) = errors(result.stderr)
    assert line.startswith("error gpucluster users access: --role: "), line
    assert what in line
    assert aws.made == []


def test_the_same_person_twice_is_bad_input(aws):
    result = run(CONFIG, "--role", "alice=A", "--role", "alice=B")
    assert result.exit_code == 2
    assert errors(result.stderr) == [
        "error gpucluster users access: --role: alice is given twice; pass one role per person"
    ]


@pytest.mark.parametrize(
    ("example", "line"),
    [
        ("default", "users: lists nobody, so there is no way in to hand out; add the people and deploy"),
        (
            "p5-eks-slinky",
            "orchestrator: is eks: its login nodes are pods, which Session Manager does not reach",
        ),
    ],
)
def test_a_cluster_with_nobody_to_let_in_is_bad_input(aws, example, line):
    config = REPO / "examples" / f"{example}.yaml"
    result = run(str(config))
    assert result.exit_code == 2, result.output
    (error,) = errors(result.stderr)
    assert error.startswith(f"error {config}: {line}"), error
    assert aws.made == []


def test_without_login_nodes_there_is_nothing_to_let_anyone_into(aws, tmp_path):
    config = tmp_path / "cluster.yaml"
    config.write_text((REPO / "examples" / "mixed.yaml").read_text() + "login_nodes: {count: 0}\n")
    result = run(str(config))
    assert result.exit_code == 2, result.output
    assert errors(result.stderr) == [
        f"error {config}: login_nodes.count: is 0: there is no login node to let anyone into; "
        "set it to 1 and deploy"
    ]


def test_a_cluster_never_deployed_is_a_failure_with_the_fix(aws):
    aws.stub("cloudformation", REGION).add_client_error(
        "describe_stacks", "ValidationError", "Stack with id mixed-cluster does not exist"
    )
    result = run(CONFIG)
    assert result.exit_code == 1, result.output
    assert errors(result.stderr) == [
        "error stack mixed-cluster (us-east-2): does not exist; "
        "deploy it with this gpucluster (`cdk deploy`) and re-run"
    ]


def test_a_stack_deployed_without_the_outputs_says_so(aws):
    stack_is(aws, {})
    result = run(CONFIG)
    assert result.exit_code == 1, result.output
    (line,) = errors(result.stderr)
    assert line.startswith(
        "error stack mixed-cluster (us-east-2): has no output SessionDocumentName or PeoplePolicyArn"
    )
    assert "Traceback" not in result.output


def test_no_running_login_node_is_a_failure_with_the_fix(aws):
    stack_is(aws, {"SessionDocumentName": DOCUMENT, "PeoplePolicyArn": POLICY})
    login_nodes_are(aws)
    result = run(CONFIG)
    assert result.exit_code == 1, result.output
    (line,) = errors(result.stderr)
    assert line.startswith("error cluster mixed (us-east-2): no login node is running"), line
