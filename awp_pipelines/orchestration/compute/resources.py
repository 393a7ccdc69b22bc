"""`AwpResource`: the Dagster resource that runs a prompt's Attempt (as dagster-dbt's `DbtCliResource` runs
dbt): where state goes, how Attempts end, and the providers and accounts of providers.yaml as typed nested
config. The compute asks it for the provider and account a launch names and has it run the Attempt.

Credentials are never resource config: an account names the variable that holds its credential (the UI shows
that name), and only the Attempt's subprocess environment ever sees the value, read when the Attempt starts.
The nested config is derived from the catalog's own models (`ProviderSpec`, `AccountSpec`): a field added
there reaches the resource without a hand-kept copy.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from dagster import Config, ConfigurableResource, Failure
from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.model.simulate import SimulateSpec
from awp_pipelines.core.packet.packet import Packet, normalize_id
from awp_pipelines.core.packet.providers_config import AccountSpec, Catalog, ProviderSpec
from awp_pipelines.core.packet.validation import validate_doc
from awp_pipelines.core.packet.yamlsrc import parse_yaml
from awp_pipelines.orchestration.compile.naming import dagster_name

if TYPE_CHECKING:
    from awp_pipelines.core.engine.attempt_record import AttemptRecord
    from awp_pipelines.core.engine.attempts import AttemptSpec
    from awp_pipelines.core.engine.interrupts import Stop
    from awp_pipelines.core.records.events import EventSink


def resource_key(packet: Packet) -> str:
    """One resource per packet: components with their own providers file or `commit` load side by side."""
    return f"awp_{dagster_name(packet.name)}"


def _plain(annotation: Any) -> Any:
    """The Dagster config type of a catalog field: constraints and literals are the catalog's to check."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _plain(args[0])
    if origin is Literal:
        return str
    if origin in (Union, types.UnionType):
        return Union[tuple(_plain(a) for a in args)]  # noqa: UP007 - built at run time from a tuple
    if origin in (dict, list):
        return origin[tuple(_plain(a) for a in args)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _config_of(annotation)  # a nested setting (a provider's `limits`)
    return annotation


def _config_of(model: type[BaseModel]) -> type[Config]:
    fields: dict[str, Any] = {
        name: (_plain(f.annotation), FieldInfo(default=f.default, default_factory=f.default_factory,
                                               description=f.description))
        for name, f in model.model_fields.items()}
    return create_model(model.__name__.replace("Spec", "Config"), __base__=Config, **fields)


if TYPE_CHECKING:  # the same fields as the specs, built below
    ProviderConfig = Config
    AccountConfig = Config
else:
    ProviderConfig = _config_of(ProviderSpec)
    AccountConfig = _config_of(AccountSpec)


class AwpResource(ConfigurableResource):
    """Runs a prompt's Attempt: its settings (state folder, commit, a test's simulate overlay) and the
    providers and accounts an Attempt of the packet may use (`awp run`, the UI, the daemon: the same)."""

    state_dir: str | None = None  # default: <packet>/.awp
    commit: bool = True
    verify_first: bool = False  # a prompt whose contract already passes completes without a session
    simulate_overlay: str | None = None  # test-only: {prompt id: simulate spec}
    providers: dict[str, ProviderConfig] = {}
    accounts: dict[str, AccountConfig] = {}

    def with_catalog(self, catalog: Catalog) -> AwpResource:
        """These settings over `catalog`'s providers and accounts (its aliases are the plan's, resolved); itself
        when it carries them already (a resource shared by the packets of one catalog is built once)."""
        providers = {n: s.model_dump() for n, s in catalog.providers.items()}
        accounts = {n: s.model_dump() for n, s in catalog.accounts.items()}
        if (providers == {n: c.model_dump() for n, c in self.providers.items()}
                and accounts == {n: c.model_dump() for n, c in self.accounts.items()}):
            return self  # compared as plain values: a Dagster Config costs ~30 µs to build
        return AwpResource(**self.settings(), providers={n: ProviderConfig(**d) for n, d in providers.items()},
                           accounts={n: AccountConfig(**d) for n, d in accounts.items()})

    def settings(self) -> dict[str, Any]:
        """The runtime settings alone (what a spawned step process is given; it reads the catalog itself)."""
        return self.model_dump(include={"state_dir", "commit", "verify_first", "simulate_overlay"})

    def catalog(self) -> Catalog:
        return Catalog(providers={n: ProviderSpec.model_validate(c.model_dump()) for n, c in self.providers.items()},
                       accounts={n: AccountSpec.model_validate(c.model_dump()) for n, c in self.accounts.items()})

    def provider(self, name: str) -> ProviderSpec:
        if name not in self.providers:
            raise Failure(description=f"provider '{name}' is not in this packet's providers file",
                          allow_retries=False)
        return ProviderSpec.model_validate(self.providers[name].model_dump())

    def account(self, name: str | None) -> AccountSpec | None:
        if name is None:
            return None
        if name not in self.accounts:
            raise Failure(description=f"account '{name}' is not in this packet's providers file",
                          allow_retries=False)
        return AccountSpec.model_validate(self.accounts[name].model_dump())

    def secrets(self, accounts: list[str | None]) -> dict[str, str]:
        """{variable: value} of these accounts' credentials, read from the environment now."""
        catalog = self.catalog()
        return {k: v for name in accounts for k, v in catalog.account_secrets(name).items()}

    def run_attempt(self, spec: AttemptSpec, sink: EventSink, cancel_on: tuple[type[BaseException], ...] = (),
                    stop: Stop | None = None) -> AttemptRecord:
        """Run the Attempt on the provider its target names, through that provider's adapter."""
        # Imported by a step, not by the code location's load (the providers' HTTP clients among them).
        from awp_pipelines.core.engine.attempts import execute_attempt
        from awp_pipelines.core.providers.registry import adapter_for

        return execute_attempt(spec, adapter_for(self.provider(spec.target.provider)), sink,
                               cancel_on=cancel_on, stop=stop)

    def state_root(self, packet_root: Path) -> Path:
        root = Path(self.state_dir) if self.state_dir else packet_root / ".awp"
        root.mkdir(parents=True, exist_ok=True)
        # A packet may live inside a target repo: AWP's commit (which honours .gitignore) must never hold its state.
        ignore = root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        return root

    def overlay_for(self, prompt_id: str) -> SimulateSpec | None:
        if not self.simulate_overlay:
            return None
        file = Path(self.simulate_overlay)
        doc = parse_yaml(file.read_text(encoding="utf-8"), file)
        data = doc.data or {}
        if not isinstance(data, dict):
            raise PacketError(file, "a simulate overlay maps prompt ids to simulate blocks", line=1)
        spec = {normalize_id(str(k)): v for k, v in data.items()}.get(prompt_id)
        return validate_doc(SimulateSpec, doc, data=spec) if spec is not None else None


