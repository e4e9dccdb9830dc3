"""The command shell: the only layer that reads argv and the environment, prints, or exits."""
