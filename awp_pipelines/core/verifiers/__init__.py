"""The verifier: a prompt's `verify:` contract checked against its repositories. Pure: no Dagster here.

    contract = VerifyContract.model_validate(front_matter["verify"])
    report = run_contract(contract, VerifyContext(packet_root, repos, default_repo, prompt_id))
"""

from awp_pipelines.core.packet.model.contract import VerifyContract

from .checklist import checklist_markdown
from .context import VerifyContext
from .engine import run_contract
from .items import ContractItem, contract_items
from .report import ItemResult, VerifierReport

__all__ = [
    "ContractItem",
    "ItemResult",
    "VerifierReport",
    "VerifyContext",
    "VerifyContract",
    "checklist_markdown",
    "contract_items",
    "run_contract",
]
