"""The provider specs agree with the registry they describe: one spec per provider, keyed by itself, the
swap/bridge split the route steps use, the contracts an EVM deployment pins, and the chains routes start on."""

from __future__ import annotations

from dataclasses import fields

from routequote.core.actions.evm import DEFAULT_DEPLOYMENTS, EvmDeployment
from routequote.core.assets import CHAINS
from routequote.core.providers import PROVIDERS
from routequote.core.routes import ROUTES, SWAP_PROVIDERS, Action, Provider


def test_every_provider_has_one_spec_keyed_by_itself() -> None:
    assert set(PROVIDERS) == set(Provider)
    assert all(spec.provider is p for p, spec in PROVIDERS.items())


def test_the_spec_action_is_the_steps_action() -> None:
    for p, spec in PROVIDERS.items():
        assert (spec.action is Action.SWAP) == (p in SWAP_PROVIDERS), p


def test_every_route_step_starts_on_a_family_its_provider_names() -> None:
    starts = {(s.provider, CHAINS[s.source.chain].family) for r in ROUTES.values() for s in r.steps}
    assert starts  # so the loop below can fail
    for provider, family in starts:
        assert family in PROVIDERS[provider].source_families, (provider, family)


def test_evm_contract_names_a_deployment_field_and_pins_an_address() -> None:
    names = {f.name for f in fields(EvmDeployment)}
    base = DEFAULT_DEPLOYMENTS[next(iter(DEFAULT_DEPLOYMENTS))]
    for p, spec in PROVIDERS.items():
        if spec.evm_contract is None:
            assert spec.evm_role is None and base.contract(p) is None, p
            continue
        assert spec.evm_contract in names and spec.evm_role, p


def test_a_fee_named_on_the_amount_differs_from_the_fee_kind_only_for_a_native_messaging_fee() -> None:
    for p, spec in PROVIDERS.items():
        assert (spec.amount_fee_kind != spec.fee_kind) == spec.native_messaging_fee, p
