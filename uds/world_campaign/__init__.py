"""A resumable campaign over one world's models: build, check, score and measure, one unit at a time.

`plan` lists the units of a world and the protocol that fixes them; `units` runs one unit (as a
child process of the driver, so that every unit starts with the code as committed and leaves no
memory behind); `driver` runs what is missing in order, seals each result, commits it at once,
and continues from the committed files on a later run or another machine.
"""
