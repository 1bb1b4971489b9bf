module cads/authzcompare

go 1.26

require cads v0.0.0

replace cads => ../../..
