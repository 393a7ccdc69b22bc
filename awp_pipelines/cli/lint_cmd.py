"""Placeholder until this command group lands."""

import click


def register(group: click.Group) -> None:
    del group
