"""Stand-in of the Kaiwu platform's module of this name, for the local checks of sb3-realm build-submission."""
